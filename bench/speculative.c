/* bench/speculative: what prompt-lookup drafting (forward --draft) buys in
 * decode, and what it costs where it does not help.
 *
 * 1. The pipeline (bin/tok encode | bin/forward -v | bin/sample -v) on a
 *    model (default data/shakespeare-tiny), with --draft 0 and --draft K
 *    alternating in every repetition, for two workloads:
 *      copy: a passage of the model's held-out text (heldout.txt beside
 *            it, else the bundled one), then its first line again: the
 *            model goes on copying what it was given;
 *      free: a speaker's name alone, so drafts come only from what the
 *            model itself wrote;
 *    each greedy and with the model's own sampling defaults (seed 1).
 *    Per case: decode tokens/s on and off (sample -v: from the first token
 *    to the last), their ratio, the acceptance (forward -v: drafts
 *    accepted / drafted), the positions computed per token decoded, and
 *    whether the ids were the same (they must be).
 * 2. With --synthetic: the cost of a batch of k + 1 positions against one
 *    on the full-size synthetic model (bench/harness/synthetic.h), whose
 *    random weights accept no draft: forward_eval of 1 and of k + 1 ids
 *    (all logits, as a batch) at position 64, alternating, median ms each
 *    for k = 1, 2, 4, 8, with its bf16, int8 and int4 weights (each with
 *    its default activations: float32, int8, int8). With an acceptance from 1, the speedup a real
 *    model of that size would see is about
 *    (1 + accepted per batch) / (cost of the batch / cost of one).
 *
 * Prints one JSON line; asserts nothing.
 *
 *   build/bench/speculative [-n TOKENS] [-r REPS] [-t THREADS] [-k K]
 *                           [--synthetic [--config FILE]] [MODEL]
 *
 * --config gives the synthetic model other shapes (default
 * SYNTHETIC_CONFIG, Qwen2.5-0.5B's; tests/fixtures/qwen-shapes/config.json
 * is a small one, to try the program quickly).
 *
 * Needs bin/tok, bin/forward and bin/sample (make).
 */
#include "harness/benchrun.h"
#include "harness/synthetic.h"
#include "core/rng.h"
#include "core/timing.h"
#include "model/forward.h"
#include "model/model.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAXREPS = 64, COPY_CHARS = 1500, LINE_CHARS = 120, BATCH_AT = 64 };

static int tokens = 200, reps = 5, threads = 1, draft = 4;
static const char *config = SYNTHETIC_CONFIG;  /* --config */
static char dir[] = "/tmp/bench-speculative.XXXXXX";

struct result {
	double tok_s;
	long computed, prompt, fed, drafted, accepted;
	char ids[64];   /* the ids file */
};

/* A number after `key` in line, or -1. */
static long after(const char *line, const char *key)
{
	const char *p = strstr(line, key);
	return p ? atol(p + strlen(key)) : -1;
}

/* One generation through the pipeline. */
static void run(const char *model, const char *prompt, const char *flags, int k,
		struct result *r)
{
	char cmd[8192];
	snprintf(r->ids, sizeof r->ids, "%s/ids%d", dir, k);
	snprintf(cmd, sizeof cmd,
		 "bin/tok encode < '%s' | bin/forward '%s' -v -t %d --draft %d "
		 "2> '%s/ferr' | bin/sample %s -n %d --ignore-eos -v 2> '%s/serr' > '%s'",
		 prompt, model, threads, k, dir, flags, tokens, dir, r->ids);
	if (system(cmd) != 0) {
		fprintf(stderr, "bench/speculative: the pipeline failed: %s\n", cmd);
		exit(1);
	}
	char path[4200], line[1024];
	snprintf(path, sizeof path, "%s/serr", dir);
	FILE *f = fopen(path, "r");
	r->tok_s = 0;
	while (f && fgets(line, sizeof line, f)) {
		char *p = strstr(line, " tokens/s");
		if (p) {
			while (p > line && p[-1] != ' ')
				p--;
			r->tok_s = atof(p);
		}
	}
	if (f)
		fclose(f);
	/* "forward: prompt 1: P positions (X prompt ids, F fed back; D drafted,
	 * A accepted); ..." */
	snprintf(path, sizeof path, "%s/ferr", dir);
	f = fopen(path, "r");
	r->computed = r->drafted = r->accepted = 0;
	while (f && fgets(line, sizeof line, f)) {
		if (!strstr(line, "forward: prompt 1: "))
			continue;
		r->computed = after(line, "prompt 1: ");
		r->prompt = after(line, "positions (");
		r->fed = after(line, " ids, ") >= 0 ? after(line, " ids, ") : after(line, " id, ");
		char *semi = strchr(line, ';');
		if (semi && strstr(semi, "drafted")) {
			r->drafted = atol(semi + 1);
			r->accepted = after(semi, "drafted, ");
		}
	}
	if (f)
		fclose(f);
}

static int same_file(const char *a, const char *b)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

/* Part 1: one workload and sampler, off and on alternating. */
static void pipeline_case(const char *model, const char *workload, const char *prompt,
			  const char *sampler, const char *flags, int first)
{
	double off[MAXREPS], on[MAXREPS];
	struct result a, b;
	long drafted = 0, accepted = 0, positions = 0, decoded = 0;
	int same = 1;
	for (int i = 0; i < reps; i++) {
		run(model, prompt, flags, 0, &a);
		run(model, prompt, flags, draft, &b);
		off[i] = a.tok_s;
		on[i] = b.tok_s;
		drafted += b.drafted;
		accepted += b.accepted;
		positions += b.computed - b.prompt;
		decoded += b.fed;
		same &= same_file(a.ids, b.ids);
	}
	struct spread so = spread_of(off, reps), sn = spread_of(on, reps);
	printf("%s{\"workload\": \"%s\", \"sampler\": \"%s\", "
	       "\"off_tok_s\": {\"median\": %.2f, \"max\": %.2f}, "
	       "\"on_tok_s\": {\"median\": %.2f, \"max\": %.2f}, \"speedup_median\": %.4f, "
	       "\"drafted\": %ld, \"accepted\": %ld, \"acceptance\": %.4f, "
	       "\"positions_per_token\": %.4f, \"same_tokens\": %s}",
	       first ? "" : ", ", workload, sampler, so.median, so.max, sn.median, sn.max,
	       so.median > 0 ? sn.median / so.median : 0, drafted, accepted,
	       drafted ? (double)accepted / (double)drafted : 0,
	       decoded ? (double)positions / (double)decoded : 0, same ? "true" : "false");
	fflush(stdout);
}

static int ignore(void *arg, int pos, const float *logits, struct err *e)
{
	(void)arg, (void)pos, (void)logits, (void)e;
	return 0;
}

/* Part 2: a batch of k + 1 positions against one, on the synthetic model
 * as weights `label` (its directory, or one of its containers), into the
 * batch_cost array (first: no separator before it). */
static void batch_cost(const char *label, const char *path, int first)
{
	struct model m;
	struct forward f;
	struct err e;
	struct model_opts mo = { 0 };
	struct forward_opts fo = { .threads = threads, .ctx = 256 };
	fo.level = cpu_level_env(NULL);
	if (model_load(&m, path, &mo, &e) < 0 ||
	    (fo.act8 = forward_act8_prepare(&m, 0, &e)) < 0 || forward_init(&f, &m, &fo, &e) < 0) {
		fprintf(stderr, "bench/speculative: %s: %s\n", path, e.msg);
		exit(1);
	}
	struct rng r;
	rng_seed(&r, 1);
	int ids[BATCH_AT + 9];
	for (int i = 0; i < BATCH_AT + 9; i++)
		ids[i] = (int)(rng_next(&r) % (uint64_t)m.cfg.vocab_size);
	if (forward_eval(&f, ids, BATCH_AT, 0, ignore, NULL, &e) < 0)
		goto fail;
	const int ks[] = { 1, 2, 4, 8 };
	for (int j = 0; j < 4; j++) {
		double one[MAXREPS], batch[MAXREPS];
		for (int i = 0; i < reps; i++) {
			double t0 = time_now();
			if (forward_eval(&f, ids + BATCH_AT, 1, 0, ignore, NULL, &e) < 0)
				goto fail;
			double t1 = time_now();
			forward_keep(&f, BATCH_AT);
			if (forward_eval(&f, ids + BATCH_AT, ks[j] + 1, 1, ignore, NULL, &e) < 0)
				goto fail;
			double t2 = time_now();
			forward_keep(&f, BATCH_AT);
			one[i] = (t1 - t0) * 1e3;
			batch[i] = (t2 - t1) * 1e3;
		}
		struct spread so = spread_of(one, reps), sb = spread_of(batch, reps);
		printf("%s{\"weights\": \"%s\", \"k\": %d, \"one_ms\": %.3f, "
		       "\"batch_ms\": %.3f, \"ratio\": %.4f}", first && !j ? "" : ", ", label,
		       ks[j], so.median, sb.median, sb.median / so.median);
		fflush(stdout);
	}
	forward_free(&f);
	model_free(&m);
	return;
fail:
	fprintf(stderr, "bench/speculative: %s\n", e.msg);
	exit(1);
}

/* Part 2 for the synthetic model's bf16, int8 and int4 weights. */
static void batch_costs(void)
{
	struct synthetic syn;
	struct err e;
	if (synthetic_ensure(&syn, config, NULL, NULL, &e) < 0) {
		fprintf(stderr, "bench/speculative: %s\n", e.msg);
		exit(1);
	}
	printf("], \"synthetic\": \"%s\", \"batch_cost\": [", syn.dir);
	batch_cost("bf16", syn.dir, 1);
	batch_cost("int8", syn.q8, 0);
	batch_cost("int4", syn.q4, 0);
}

/* Writes the two prompts' text into dir. */
static void prompts(const char *model, char *copy, char *free_, size_t cap)
{
	char held[4200], buf[COPY_CHARS];
	snprintf(held, sizeof held, "%s/heldout.txt", model);
	FILE *f = fopen(held, "r");
	if (!f)
		f = fopen("data/shakespeare-tiny/heldout.txt", "r");
	size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
	if (f)
		fclose(f);
	if (n == 0) {
		fprintf(stderr, "bench/speculative: no held-out text to copy\n");
		exit(1);
	}
	snprintf(copy, cap, "%s/copy.txt", dir);
	snprintf(free_, cap, "%s/free.txt", dir);
	FILE *c = fopen(copy, "w"), *g = fopen(free_, "w");
	if (!c || !g) {
		perror("bench/speculative");
		exit(1);
	}
	fwrite(buf, 1, n, c);
	fputs("\n\n", c);
	fwrite(buf, 1, n < LINE_CHARS ? n : LINE_CHARS, c);
	fputs("ROMEO:\n", g);
	fclose(c);
	fclose(g);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "synthetic", no_argument, NULL, 'S' },
					    { "config", required_argument, NULL, 'C' },
					    { 0 } };
	int synthetic = 0, c;
	while ((c = getopt_long(argc, argv, "n:r:t:k:", lo, NULL)) != -1) {
		switch (c) {
		case 'n': tokens = atoi(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'k': draft = atoi(optarg); break;
		case 'S': synthetic = 1; break;
		case 'C': config = optarg; break;
		default:
			fprintf(stderr, "usage: build/bench/speculative [-n TOKENS] [-r REPS] "
				"[-t THREADS] [-k K] [--synthetic [--config FILE]] [MODEL]\n");
			return 2;
		}
	}
	if (tokens < 2 || reps < 1 || reps > MAXREPS || threads < 1 || draft < 1) {
		fprintf(stderr, "bench/speculative: -n >= 2, -r 1..%d, -t >= 1, -k >= 1\n",
			MAXREPS);
		return 2;
	}
	const char *model = optind < argc ? argv[optind] : "data/shakespeare-tiny";
	if (!mkdtemp(dir)) {
		perror("bench/speculative: mkdtemp");
		return 1;
	}
	char copy[4200], free_[4200];
	prompts(model, copy, free_, sizeof copy);
	struct bench_machine bm;
	bench_machine(&bm);
	printf("{\"bench\": \"speculative\", \"date\": \"%s\", \"commit\": \"%s\", "
	       "\"load1\": %.2f, \"model\": \"%s\", \"threads\": %d, \"tokens\": %d, "
	       "\"reps\": %d, \"draft\": %d, \"cases\": [", bm.date, bm.commit,
	       bench_loadavg(), model, threads, tokens, reps, draft);
	pipeline_case(model, "copy", copy, "greedy", "--greedy", 1);
	pipeline_case(model, "copy", copy, "default", "--seed 1", 0);
	pipeline_case(model, "free", free_, "greedy", "--greedy", 0);
	pipeline_case(model, "free", free_, "default", "--seed 1", 0);
	if (synthetic)
		batch_costs();
	printf("]}\n");
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -r '%s'", dir);
	return system(cmd) != 0;
}
