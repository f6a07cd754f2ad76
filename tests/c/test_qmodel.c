/* Simulated quantization: a model whose matrices are stored as int8 / int4
 * and computed by the integer kernels gives the logits of a float32 model
 * whose weights are those integers dequantized (w = scale * q), within
 * 1e-4 at every position, and the same 48 greedy tokens. So the stored
 * model computes exactly the function the perplexity numbers describe. */
#include "check.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/qmodel.h"
#include "kernels/quant.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run {
	int V;
	float *all;   /* [n x V] every position's logits */
	float *last;  /* [V] */
};

static int keep(void *arg, int pos, const float *lg, struct err *e)
{
	struct run *r = arg;
	memcpy(r->last, lg, sizeof(float) * r->V);
	if (r->all)
		memcpy(r->all + (size_t)pos * r->V, lg, sizeof(float) * r->V);
	return 0;
}

static int argmax(const float *v, int n)
{
	int a = 0;
	for (int i = 1; i < n; i++)
		if (v[i] > v[a])
			a = i;
	return a;
}

/* Runs ids then 48 greedy steps; all gets the prompt's logits. */
static void run(const struct model *m, const int *ids, int n, float *all, int *greedy)
{
	struct forward f;
	struct forward_opts o = { .threads = 1, .ctx = n + 64, .level = cpu_level_env(NULL) };
	struct err e;
	if (forward_init(&f, m, &o, &e) < 0) {
		fprintf(stderr, "forward_init: %s\n", e.msg);
		exit(1);
	}
	struct run r = { .V = m->cfg.vocab_size, .all = all,
			 .last = malloc(sizeof(float) * m->cfg.vocab_size) };
	CHECK(forward_eval(&f, ids, n, 1, keep, &r, &e) == 0, "eval: %s", e.msg);
	r.all = NULL;
	for (int i = 0; i < 48; i++) {
		greedy[i] = argmax(r.last, r.V);
		CHECK(forward_eval(&f, &greedy[i], 1, 0, keep, &r, &e) == 0, "eval: %s", e.msg);
	}
	free(r.last);
	forward_free(&f);
}

static void simulated(const char *model_dir, const char *case_json, const struct qscheme *s)
{
	struct model q, sim;
	struct model_opts bf16 = { 0 }, f32 = { .f32 = 1 };
	struct err e;
	char name[32];
	qscheme_name(s, name, sizeof name);
	if (model_load(&q, model_dir, &bf16, &e) < 0 || model_quantize(&q, s, &e) < 0 ||
	    model_load(&sim, model_dir, &f32, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		exit(1);
	}
	/* The simulated model: float32, the quantized matrices dequantized. */
	struct wmat *mq[MODEL_MATRICES(64)], *ms[MODEL_MATRICES(64)];
	const char *names[MODEL_MATRICES(64)];
	int nq = model_matrices(&q, mq, names), quantized = 0;
	model_matrices(&sim, ms, names);
	for (int i = 0; i < nq; i++) {
		if (mq[i]->type != WT_Q8 && mq[i]->type != WT_Q4)
			continue;
		quantized++;
		/* (the widened matrix is the model's own: its rows interleaved) */
		float *row = malloc(sizeof(float) * (size_t)mq[i]->cols);
		for (int r = 0; r < mq[i]->rows; r++) {
			quant_dequant_row(mq[i], r, 0, mq[i]->cols, row);
			for (int c = 0; c < mq[i]->cols; c++)
				((float *)ms[i]->data)[wmat_at(ms[i], r, c)] = row[c];
		}
		free(row);
	}
	if (sim.cfg.tie_embeddings)
		sim.w.lm_head = sim.w.embed;
	CHECK(quantized == nq - !s->embeddings, "%s: %d of %d matrices quantized", name,
	      quantized, nq);

	int n, V = q.cfg.vocab_size, gq[48], gs[48];
	int *ids = check_golden_ids(case_json, &n);
	float *aq = malloc(sizeof(float) * (size_t)n * V), *as = malloc(sizeof(float) * (size_t)n * V);
	run(&q, ids, n, aq, gq);
	run(&sim, ids, n, as, gs);
	double d = check_max_abs(aq, as, (long)n * V, NULL);
	printf("%s %s: %d positions, largest logit difference %.3g\n", model_dir, name, n, d);
	CHECK(d < 1e-4, "%s %s: logits differ by %g from the simulated model", model_dir, name, d);
	CHECK(!memcmp(gq, gs, sizeof gq), "%s %s: greedy tokens differ", model_dir, name);
	free(aq);
	free(as);
	free(ids);
	model_free(&q);
	model_free(&sim);
}

int main(void)
{
	struct qscheme int8e = { .type = WT_Q8, .embeddings = true },
		       int4e = { .type = WT_Q4, .group_size = 32, .embeddings = true },
		       int8 = { .type = WT_Q8 }, int4g64 = { .type = WT_Q4, .group_size = 64 };
	simulated("data/shakespeare-tiny", "tests/golden/shakespeare-tiny/citizen.json", &int8e);
	simulated("data/shakespeare-tiny", "tests/golden/shakespeare-tiny/citizen.json", &int4e);
	simulated("tests/fixtures/qwen-shapes", "tests/golden/qwen-shapes/rand33.json", &int8);
	simulated("tests/fixtures/qwen-shapes", "tests/golden/qwen-shapes/rand33.json", &int4g64);
	return check_done("qmodel");
}
