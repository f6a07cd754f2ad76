/* bench/pipeline: what the four-process pipeline costs against the same
 * generation done in one process through the library.
 *
 *   A: printf IDS | bin/forward MODEL | bin/sample FLAGS -v | bin/tok decode
 *   B: model_load + forward_eval + sampler_next in this process
 *
 * Same prompt (16 ids), same sampler settings (Qwen2.5's defaults:
 * temperature 0.7, top-k 20, top-p 0.8, repetition penalty 1.1), same seed,
 * so both draw the same tokens (reported as same_tokens). Decode speed is
 * tokens/s from the first token drawn to the last, as `sample -v` reports
 * it; A and B alternate, REPS times each, so a busy machine slows both
 * alike. Both run as `forward` does by default (int8 activations for an
 * int8 or int4 model), without drafting (`--draft 0`: speculation is
 * forward's, and would be measured here as the pipeline's gain). Prints one
 * JSON line; asserts nothing.
 *
 *   build/bench/pipeline [MODEL]   (default: the synthetic full-size model,
 *                                   bench/harness/synthetic.h, written if missing)
 *
 * Needs bin/forward, bin/sample and bin/tok (make).
 */
#include "harness/benchrun.h"
#include "model/forward.h"
#include "model/model.h"
#include "core/rng.h"
#include "sample/sampler.h"
#include "harness/synthetic.h"
#include "core/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PROMPT = 16, TOKENS = 32, REPS = 3, SEED = 1 };
static const char *flags =
	"--temperature 0.7 --top-k 20 --top-p 0.8 --repeat-penalty 1.1 --ignore-eos";

struct gen {
	float *logits;   /* the last frame's logits, copied as sample gets them */
	size_t n;
};

static int keep(void *arg, int pos, const float *logits, struct err *e)
{
	struct gen *g = arg;
	(void)pos;
	(void)e;
	memcpy(g->logits, logits, sizeof(float) * g->n);
	return 0;
}

/* B: generation in this process. Returns decode tokens/s; ids[] out. */
static double in_process(struct forward *f, struct sampler *s, float *buf,
			 const int *prompt, int *ids)
{
	struct sampler_params p = { .temperature = 0.7, .top_k = 20, .top_p = 0.8,
				    .repetition_penalty = 1.1 };
	struct rng r;
	struct err e;
	struct gen g = { .logits = buf, .n = (size_t)sampler_n_vocab(s) };
	rng_seed(&r, SEED);
	forward_reset(f);
	sampler_clear_context(s);
	int32_t ctx[PROMPT];
	for (int i = 0; i < PROMPT; i++)
		ctx[i] = prompt[i];
	sampler_add_context(s, ctx, PROMPT, &e);
	double t_first = 0;
	if (forward_eval(f, prompt, PROMPT, 0, keep, &g, &e) < 0)
		goto fail;
	for (int n = 0; n < TOKENS; n++) {
		int32_t id = sampler_next(s, buf, &p, &r, &e);
		if (id < 0)
			goto fail;
		ids[n] = id;
		if (n == 0)
			t_first = time_now();
		if (n == TOKENS - 1)
			break;
		sampler_add_context(s, &id, 1, &e);
		int one = id;
		if (forward_eval(f, &one, 1, 0, keep, &g, &e) < 0)
			goto fail;
	}
	return (TOKENS - 1) / (time_now() - t_first);
fail:
	fprintf(stderr, "bench/pipeline: %s\n", e.msg);
	exit(1);
}

/* A: the pipeline. Returns sample's decode tokens/s; ids[] out. */
static double pipeline(const char *model, const int *prompt, int *ids)
{
	char cmd[8192], ids_path[] = "/tmp/bench-pipeline.XXXXXX";
	int fd = mkstemp(ids_path);
	if (fd < 0) {
		perror("mkstemp");
		exit(1);
	}
	close(fd);
	int n = snprintf(cmd, sizeof cmd, "printf '");
	for (int i = 0; i < PROMPT; i++)
		n += snprintf(cmd + n, sizeof cmd - (size_t)n, "%d ", prompt[i]);
	snprintf(cmd + n, sizeof cmd - (size_t)n,
		 "' | bin/forward '%s' --draft 0 | bin/sample %s --seed %d -n %d -v "
		 "2>'%s.err' | tee '%s' | bin/tok decode > /dev/null",
		 model, flags, SEED, TOKENS, ids_path, ids_path);
	if (system(cmd) != 0) {
		fprintf(stderr, "bench/pipeline: the pipeline failed: %s\n", cmd);
		exit(1);
	}
	char err_path[64];
	snprintf(err_path, sizeof err_path, "%s.err", ids_path);
	FILE *f = fopen(err_path, "r");
	double tps = 0;
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		char *p = strstr(line, " tokens/s");
		if (p) {
			while (p > line && p[-1] != ' ')
				p--;
			tps = atof(p);
		}
	}
	if (f)
		fclose(f);
	f = fopen(ids_path, "r");
	for (int i = 0; f && i < TOKENS; i++)
		if (fscanf(f, "%d", &ids[i]) != 1)
			ids[i] = -1;
	if (f)
		fclose(f);
	unlink(ids_path);
	unlink(err_path);
	return tps;
}

int main(int argc, char **argv)
{
	char model_path[SYNTHETIC_PATH_MAX];
	struct err e;
	if (argc > 1) {
		snprintf(model_path, sizeof model_path, "%s", argv[1]);
	} else {
		struct synthetic syn;
		if (synthetic_ensure(&syn, SYNTHETIC_CONFIG, NULL, NULL, &e) < 0) {
			fprintf(stderr, "bench/pipeline: %s\n", e.msg);
			return 1;
		}
		snprintf(model_path, sizeof model_path, "%s", syn.dir);
	}
	struct model m;
	struct forward f;
	struct model_opts mo = { 0 };
	struct forward_opts fo = { 0 };
	fo.level = cpu_level_env(NULL);
	if (model_load(&m, model_path, &mo, &e) < 0 ||
	    (fo.act8 = forward_act8_prepare(&m, 0, &e)) < 0 || forward_init(&f, &m, &fo, &e) < 0) {
		fprintf(stderr, "bench/pipeline: %s\n", e.msg);
		return 1;
	}
	if (m.cfg.vocab_size != 151936) {
		fprintf(stderr, "bench/pipeline: %s: expected the full vocabulary\n",
			model_path);
		return 1;
	}
	struct sampler *s = sampler_new(m.cfg.vocab_size, &e);
	float *buf = malloc(sizeof(float) * (size_t)m.cfg.vocab_size);
	int prompt[PROMPT];
	for (int i = 0; i < PROMPT; i++)
		prompt[i] = 1000 + 37 * i;

	double a[REPS], b[REPS];
	int ids_a[TOKENS], ids_b[TOKENS], same = 1;
	in_process(&f, s, buf, prompt, ids_b); /* warm-up: pages in the weights */
	for (int r = 0; r < REPS; r++) {
		a[r] = pipeline(model_path, prompt, ids_a);
		b[r] = in_process(&f, s, buf, prompt, ids_b);
		same &= !memcmp(ids_a, ids_b, sizeof ids_a);
	}
	struct spread sa = spread_of(a, REPS), sb = spread_of(b, REPS);
	struct bench_machine bm;
	bench_machine(&bm);
	printf("{\"bench\": \"pipeline\", \"date\": \"%s\", \"commit\": \"%s\", "
	       "\"load1\": %.2f, \"model\": \"%s\", \"threads\": %d, \"tokens\": %d, "
	       "\"reps\": %d, \"pipeline_tok_s\": {\"median\": %.2f, \"max\": %.2f}, "
	       "\"in_process_tok_s\": {\"median\": %.2f, \"max\": %.2f}, "
	       "\"overhead_median\": %.4f, \"same_tokens\": %s}\n",
	       bm.date, bm.commit, bench_loadavg(), model_path, f.threads, TOKENS, REPS,
	       sa.median, sa.max, sb.median, sb.max, 1 - sa.median / sb.median,
	       same ? "true" : "false");
	free(buf);
	sampler_free(s);
	forward_free(&f);
	model_free(&m);
	return 0;
}
