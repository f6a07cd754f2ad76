/* The forward pass against transformers (tests/golden/shakespeare-tiny and
 * tests/golden/qwen-shapes): logits, argmax, logsumexp, top-10 sets, the
 * residual stream per layer, greedy decoding through the KV cache; then the
 * engine against itself: five chunkings of the same ids, 1 vs 2 threads,
 * SIMD vs the scalar reference, float32 weights. Prints the largest
 * differences seen. */
#include "check.h"
#include "core/cpu.h"
#include "model/forward.h"
#include "model/model.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static cJSON *load_json(const char *path)
{
	char *s = check_slurp(path, NULL);
	cJSON *j = cJSON_Parse(s);
	free(s);
	if (!j) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	return j;
}

static int *int_array(const cJSON *a, int *n)
{
	*n = cJSON_GetArraySize(a);
	int *v = malloc(sizeof(int) * (size_t)(*n + 1));
	for (int i = 0; i < *n; i++)
		v[i] = cJSON_GetArrayItem(a, i)->valueint;
	return v;
}

static float *floats(const char *path, size_t n)
{
	size_t len;
	char *b = check_slurp(path, &len);
	if (len != 4 * n) {
		fprintf(stderr, "%s: expected %zu floats\n", path, n);
		exit(1);
	}
	return (float *)b;
}

/* Largest differences over everything a golden case checks. */
static double worst_last, worst_all, worst_lse, worst_hidden;

/* What a run of the golden ids produces, position by position. */
struct golden_run {
	const cJSON *c;
	int V, n, all;
	const float *all_logits;  /* [n x V] or NULL */
	float *last;              /* [V]: the last position's logits */
	int bad_argmax, bad_topk;
};

/* The 11 largest values of x, descending. */
static void top11(const float *x, int n, float top[11])
{
	for (int k = 0; k < 11; k++)
		top[k] = -INFINITY;
	for (int i = 0; i < n; i++) {
		if (x[i] <= top[10])
			continue;
		int k = 10;
		for (; k > 0 && top[k - 1] < x[i]; k--)
			top[k] = top[k - 1];
		top[k] = x[i];
	}
}

static int on_logits(void *arg, int pos, const float *lg, struct err *e)
{
	struct golden_run *r = arg;
	int V = r->V;
	int am = 0;
	double mx = lg[0], s = 0;
	for (int i = 1; i < V; i++)
		if (lg[i] > lg[am])
			am = i;
	mx = lg[am];
	for (int i = 0; i < V; i++)
		s += exp((double)lg[i] - mx);
	double lse = mx + log(s);
	double want = cJSON_GetArrayItem(cJSON_GetObjectItem(r->c, "logsumexp"), pos)->valuedouble;
	worst_lse = fmax(worst_lse, fabs(lse - want));
	if (am != cJSON_GetArrayItem(cJSON_GetObjectItem(r->c, "argmax"), pos)->valueint)
		r->bad_argmax++;
	/* Top-10 as a set, where the 10th and 11th logits are apart. */
	float sorted[11];
	top11(lg, V, sorted);
	if (sorted[9] - sorted[10] > 1e-3f) {
		const cJSON *ids = cJSON_GetArrayItem(cJSON_GetObjectItem(r->c, "topk_ids"), pos);
		for (int k = 0; k < 10; k++)
			if (lg[cJSON_GetArrayItem(ids, k)->valueint] < sorted[9])
				r->bad_topk++;
	}
	if (r->all_logits)
		worst_all = fmax(worst_all, check_max_abs(lg, r->all_logits + (size_t)pos * V,
							  V, NULL));
	if (pos == r->n - 1)
		memcpy(r->last, lg, sizeof(float) * V);
	(void)e;
	return 0;
}

static float *hidden;  /* [(n_layers + 2) x hidden] */

static void on_trace(void *arg, int pos, int index, const float *h, int n)
{
	memcpy(hidden + (size_t)index * n, h, sizeof(float) * n);
	(void)arg;
	(void)pos;
}

static int argmax(const float *x, int n)
{
	int a = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[a])
			a = i;
	return a;
}

static int keep_last(void *arg, int pos, const float *lg, struct err *e)
{
	struct golden_run *r = arg;
	memcpy(r->last, lg, sizeof(float) * r->V);
	(void)pos;
	(void)e;
	return 0;
}

/* Feeds ids in the chunks given (sizes summing to n); the last logits land
 * in out. Returns the positions computed. */
static long run_chunks(struct forward *f, const int *ids, const int *sizes, int nsizes,
		       float *out)
{
	struct golden_run r = { .V = f->m->cfg.vocab_size, .last = out };
	struct err e;
	long before = f->positions;
	forward_reset(f);
	for (int i = 0, at = 0; i < nsizes; at += sizes[i++])
		if (forward_eval(f, ids + at, sizes[i], 0, keep_last, &r, &e) < 0) {
			fprintf(stderr, "eval: %s\n", e.msg);
			exit(1);
		}
	return f->positions - before;
}

static void init(struct forward *f, const struct model *m, int threads,
		 enum cpu_level level, int batch)
{
	struct forward_opts o = { .threads = threads, .ctx = 1024, .batch = batch,
				  .level = level };
	struct err e;
	if (forward_init(f, m, &o, &e) < 0) {
		fprintf(stderr, "forward_init: %s\n", e.msg);
		exit(1);
	}
}

/* Every case of one golden directory against the model. */
static void golden(const char *model_dir, const char *golden_dir, int has_all)
{
	struct model m;
	struct err e;
	struct model_opts mo = { 0 };
	if (model_load(&m, model_dir, &mo, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		exit(1);
	}
	struct forward f;
	struct forward_opts fo = { .threads = 1, .ctx = 1024,
				   .level = cpu_level_env(NULL), .trace = on_trace };
	if (forward_init(&f, &m, &fo, &e) < 0) {
		fprintf(stderr, "forward_init: %s\n", e.msg);
		exit(1);
	}
	int V = m.cfg.vocab_size, H = m.cfg.hidden_size, NL = m.cfg.n_layers;
	hidden = malloc(sizeof(float) * (size_t)(NL + 2) * H);
	char path[512];
	snprintf(path, sizeof path, "%s/index.json", golden_dir);
	cJSON *index = load_json(path);
	/* an empty or unreadable index would check nothing */
	CHECK(cJSON_GetArraySize(index) > 0, "%s: no golden cases", path);
	const cJSON *it;
	cJSON_ArrayForEach(it, index) {
		const char *name = cJSON_GetObjectItem(it, "case")->valuestring;
		snprintf(path, sizeof path, "%s/%s.json", golden_dir, name);
		cJSON *c = load_json(path);
		int n, ng;
		int *ids = int_array(cJSON_GetObjectItem(c, "ids"), &n);
		int *greedy = int_array(cJSON_GetObjectItem(c, "greedy_48"), &ng);
		snprintf(path, sizeof path, "%s/%s", golden_dir,
			 cJSON_GetObjectItem(c, "last_logits")->valuestring);
		float *last_ref = floats(path, (size_t)V);
		float *all_ref = NULL;
		if (has_all) {
			snprintf(path, sizeof path, "%s/%s", golden_dir,
				 cJSON_GetObjectItem(c, "all_logits")->valuestring);
			all_ref = floats(path, (size_t)n * V);
		}
		struct golden_run r = { .c = c, .V = V, .n = n, .all = 1, .all_logits = all_ref,
					.last = malloc(sizeof(float) * V) };
		forward_reset(&f);
		CHECK(forward_eval(&f, ids, n, 1, on_logits, &r, &e) == 0, "%s: %s", name, e.msg);
		double d = check_max_abs(r.last, last_ref, V, NULL);
		worst_last = fmax(worst_last, d);
		CHECK(d < 1e-4, "%s: last logits differ by %g", name, d);
		CHECK(r.bad_argmax == 0, "%s: argmax differs at %d positions", name, r.bad_argmax);
		CHECK(r.bad_topk == 0, "%s: %d top-10 ids missing", name, r.bad_topk);

		/* The residual stream at the last position, layer by layer.
		 * transformers reports the embedding, blocks 0 .. NL - 2 and the
		 * final norm; the trace also has block NL - 1 before it. */
		const cJSON *hl = cJSON_GetObjectItem(c, "hidden_last_pos");
		CHECK(cJSON_GetArraySize(hl) == NL + 1, "%s: %d hidden states", name,
		      cJSON_GetArraySize(hl));
		for (int i = 0; i < NL + 1 && i < cJSON_GetArraySize(hl); i++) {
			const cJSON *row = cJSON_GetArrayItem(hl, i);
			const float *mine = hidden + (size_t)(i < NL ? i : NL + 1) * H;
			double hd = 0;
			for (int j = 0; j < H; j++)
				hd = fmax(hd, fabs(mine[j] -
						   cJSON_GetArrayItem(row, j)->valuedouble));
			worst_hidden = fmax(worst_hidden, hd);
			CHECK(hd < 1e-4, "%s: hidden state %d differs by %g", name, i, hd);
		}

		/* Greedy decoding through the cache, one token per call. */
		int tok = argmax(r.last, V), bad = -1;
		for (int i = 0; i < ng; i++) {
			if (tok != greedy[i]) {
				bad = i;
				break;
			}
			if (i + 1 < ng) {
				if (forward_eval(&f, &tok, 1, 0, keep_last, &r, &e) < 0) {
					CHECK(0, "%s: greedy step %d: %s", name, i + 1, e.msg);
					break;
				}
				tok = argmax(r.last, V);
			}
		}
		CHECK(bad < 0, "%s: greedy token %d is %d, want %d", name, bad, tok,
		      bad >= 0 ? greedy[bad] : 0);
		free(r.last);
		free(last_ref);
		free(all_ref);
		free(ids);
		free(greedy);
		cJSON_Delete(c);
	}
	cJSON_Delete(index);
	free(hidden);
	forward_free(&f);
	model_free(&m);
}

/* The same ids five ways: one call, one at a time, prompt then decode, two
 * halves, ragged chunks; and through a batch smaller than the prompt. The
 * one-call logits are also checked against transformers' (golden). */
static void chunkings(const struct model *m, const int *ids, int n,
		      const float *golden_last, const char *what)
{
	int V = m->cfg.vocab_size;
	struct forward f, fb;
	init(&f, m, 1, cpu_level_env(NULL), 0);
	init(&fb, m, 1, cpu_level_env(NULL), 5);
	float *ref = malloc(sizeof(float) * V), *got = malloc(sizeof(float) * V);
	/* Sized by n: any golden case fits. "Prompt then decode" needs a
	 * prompt of at least one id before its four single steps. */
	CHECK(n >= 5, "%s: %d ids, too few for a prompt and four decode steps", what, n);
	if (n < 5)
		return;
	int *ones = malloc(sizeof(int) * (size_t)n), *ragged = malloc(sizeof(int) * (size_t)n);
	int prompt[5] = { n - 4, 1, 1, 1, 1 }, halves[2] = { n / 2, n - n / 2 };
	int nr = 0, left = n;
	for (int i = 0; i < n; i++)
		ones[i] = 1;
	for (int s = 3; left > 0; s = s % 4 + 1) {
		ragged[nr] = s < left ? s : left;
		left -= ragged[nr++];
	}
	struct { const int *sizes; int n; const char *name; } ways[] = {
		{ ones, n, "one at a time" }, { prompt, 5, "prompt then decode" },
		{ halves, 2, "two halves" }, { ragged, nr, "ragged" },
	};
	long work = run_chunks(&f, ids, &n, 1, ref);
	CHECK(work == n, "%s: one call computed %ld positions for %d ids", what, work, n);
	double dg = check_max_abs(ref, golden_last, V, NULL);
	CHECK(dg < 1e-4, "%s: last logits differ from transformers' by %g", what, dg);
	double worst = 0;
	for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
		work = run_chunks(&f, ids, ways[w].sizes, ways[w].n, got);
		CHECK(work == n, "%s, %s: computed %ld positions for %d ids", what,
		      ways[w].name, work, n);
		double d = check_max_abs(ref, got, V, NULL);
		worst = fmax(worst, d);
		CHECK(d == 0, "%s, %s: logits differ by %g", what,
		      ways[w].name, d);
	}
	work = run_chunks(&fb, ids, &n, 1, got);
	double d = check_max_abs(ref, got, V, NULL);
	worst = fmax(worst, d);
	CHECK(d == 0, "%s, batch of 5: logits differ by %g", what, d);
	CHECK(work == n && fb.head_rows == 1, "%s, batch of 5: %ld positions, %ld "
	      "LM-head rows", what, work, fb.head_rows);
	printf("%s: chunkings differ by at most %g; transformers by %.3g\n", what,
	       worst, dg);
	free(ref);
	free(got);
	free(ones);
	free(ragged);
	forward_free(&f);
	forward_free(&fb);
}

/* The same ids with another thread count or kernel level: bitwise. */
static void same_logits(const struct model *m, const int *ids, int n, int threads,
			enum cpu_level level, const char *what)
{
	int V = m->cfg.vocab_size;
	struct forward a, b;
	init(&a, m, 1, cpu_level_env(NULL), 0);
	init(&b, m, threads, level, 0);
	float *x = malloc(sizeof(float) * V), *y = malloc(sizeof(float) * V);
	int split[2] = { n - 1, 1 };  /* a prefill and a decode step */
	run_chunks(&a, ids, split, 2, x);
	run_chunks(&b, ids, split, 2, y);
	double d = check_max_abs(x, y, V, NULL);
	CHECK(memcmp(x, y, sizeof(float) * V) == 0, "%s: logits differ (by %g)", what, d);
	free(x);
	free(y);
	forward_free(&a);
	forward_free(&b);
}

static int *case_ids(const char *path, int *n)
{
	cJSON *c = load_json(path);
	int *ids = int_array(cJSON_GetObjectItem(c, "ids"), n);
	cJSON_Delete(c);
	return ids;
}

int main(void)
{
	const char *tiny = "data/shakespeare-tiny", *shapes = "tests/fixtures/qwen-shapes";
	golden(tiny, "tests/golden/shakespeare-tiny", 0);
	golden(shapes, "tests/golden/qwen-shapes", 1);
	printf("vs transformers: last logits %.3g, all logits %.3g, logsumexp %.3g, "
	       "hidden states %.3g\n", worst_last, worst_all, worst_lse, worst_hidden);
	CHECK(worst_lse < 1e-4, "logsumexp differs by %g", worst_lse);
	CHECK(worst_all < 1e-4, "all logits differ by %g", worst_all);

	struct model m, m32;
	struct err e;
	struct model_opts bf = { 0 }, wide = { .f32 = 1 };
	int n, nt;
	int *ids = case_ids("tests/golden/qwen-shapes/rand33.json", &n);
	int *tids = case_ids("tests/golden/shakespeare-tiny/citizen.json", &nt);
	float *last = floats("tests/golden/qwen-shapes/rand33.last.f32", 4096);
	float *tlast = floats("tests/golden/shakespeare-tiny/citizen.last.f32", 151936);
	if (model_load(&m, shapes, &bf, &e) < 0 || model_load(&m32, shapes, &wide, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	chunkings(&m, ids, n, last, "qwen-shapes bf16");
	chunkings(&m32, ids, n, last, "qwen-shapes f32");
	same_logits(&m, ids, n, 2, cpu_level_env(NULL), "qwen-shapes bf16, 2 threads");
	same_logits(&m32, ids, n, 2, cpu_level_env(NULL), "qwen-shapes f32, 2 threads");
	same_logits(&m, ids, n, 1, CPU_SCALAR, "qwen-shapes bf16, scalar kernels");
	same_logits(&m, ids, n, 2, CPU_SCALAR, "qwen-shapes bf16, scalar, 2 threads");
	if (cpu_level_env(NULL) > CPU_AVX2)
		same_logits(&m, ids, n, 2, CPU_AVX2, "qwen-shapes bf16, avx2, 2 threads");
	model_free(&m32);
	model_free(&m);

	if (model_load(&m, tiny, &bf, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	chunkings(&m, tids, nt, tlast, "shakespeare-tiny bf16");
	same_logits(&m, tids, nt, 2, cpu_level_env(NULL), "shakespeare-tiny, 2 threads");
	same_logits(&m, tids, 4, 1, CPU_SCALAR, "shakespeare-tiny, scalar kernels");
	model_free(&m);
	free(ids);
	free(tids);
	free(last);
	free(tlast);
	return check_done("forward");
}
