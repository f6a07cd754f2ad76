/* bench/quant: the decode matvec of the largest matrix of Qwen2.5-0.5B (the
 * tied LM head, vocab x hidden from data/qwen2.5-0.5b-instruct/config.json)
 * stored as bf16, int8 and int4 (group 32), one thread, against this
 * machine's single-thread read bandwidth.
 *
 * Each matrix is far larger than the caches, so every pass streams it from
 * DRAM. For each storage: the best and the median of REPS passes, in
 * milliseconds, and the effective bandwidth (bytes of weights and scales
 * read / best time) as a fraction of the single-thread read bandwidth
 * (bench/harness/membw.h, measured in the same run). The int8 VNNI
 * kernel with int8 activations is timed too when the CPU has it.
 *
 * With VNNI, prefill too: a batch of PREFILL_T inputs through the
 * intermediate x hidden matrix (a layer's gate projection) stored as int8
 * and as int4, with int8 activations, two ways alternating in each
 * repetition: the tiled batch kernel (quant_matmul_q8a) and one
 * matrix-vector product per input (quant_matvec_q8a, the batch path before
 * the tiles), the inputs quantized inside both; the ratio of the medians.
 * Both give the same bits, which is checked here. One JSON line on stdout;
 * asserts nothing else.
 *
 *   make bench        (appends the line to bench/results.jsonl)
 */
#include "core/bf16.h"
#include "format/config.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "harness/membw.h"
#include "core/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG "data/qwen2.5-0.5b-instruct/config.json"
enum { REPS = 9, PREFILL_T = 64 };

/* The best and the median of REPS times. */
static struct spread summarize(double *t)
{
	return spread_of(t, REPS);
}

static uint64_t rng = 88172645463325252ull;

static float frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 0.1 - 0.05);
}

static struct spread time_matmul(const struct kernels *k, const struct wmat *w,
				 const float *x, float *y)
{
	double t[REPS];
	for (int r = 0; r < REPS; r++) {
		double t0 = time_now();
		kern_matmul(k, &(struct kern_mm){ .y = y, .ldy = w->rows, .w = w, .r0 = 0,
			.r1 = w->rows, .x = x, .ldx = w->cols, .T = 1 });
		t[r] = time_now() - t0;
	}
	return summarize(t);
}

static void report(const char *name, struct spread t, size_t bytes, double bw, int last)
{
	double gbs = (double)bytes / t.min / 1e9;
	printf("\"%s\":{\"bytes\":%zu,\"best_ms\":%.3f,\"median_ms\":%.3f,\"gb_s\":%.2f,"
	       "\"of_bandwidth\":%.3f}%s", name, bytes, t.min * 1e3, t.median * 1e3, gbs,
	       gbs / bw, last ? "" : ",");
}

/* PREFILL_T inputs x[t * cols] through w with int8 activations: the tiled
 * batch kernel (tiled) or one matrix-vector product per input. */
static void prefill_pass(const struct wmat *w, const float *x, struct q8act *a,
			 float *y, int tiled)
{
	for (int t = 0; t < PREFILL_T; t++)
		q8a_quantize(x + (size_t)t * w->cols, w->cols, &a[t]);
	if (tiled) {
		quant_matmul_q8a(CPU_AVX512, w, y, w->rows, 0, w->rows, a, PREFILL_T);
		return;
	}
	for (int t = 0; t < PREFILL_T; t++)
		quant_matvec_q8a(1, w, &a[t], y + (size_t)t * w->rows, 0, w->rows);
}

/* The prefill part of the record (see the top): "prefill_int8act":{...}. */
static int prefill(const struct model_config *c, const struct wmat *src_all)
{
	int rows = c->intermediate_size, cols = c->hidden_size;
	/* The first rows of the big bf16 matrix, as a matrix of this shape. */
	struct wmat src = *src_all;
	src.rows = rows;
	float *x = malloc(sizeof(float) * (size_t)PREFILL_T * cols);
	float *y[2] = { malloc(sizeof(float) * (size_t)PREFILL_T * rows),
			malloc(sizeof(float) * (size_t)PREFILL_T * rows) };
	int np = q8a_padded(cols);
	int8_t *aq = malloc((size_t)np * PREFILL_T);
	float *as = malloc(sizeof(float) * (size_t)(np / Q8A_BLOCK) * PREFILL_T);
	struct q8act a[PREFILL_T];
	for (int t = 0; t < PREFILL_T; t++)
		a[t] = (struct q8act){ .q = aq + (size_t)t * np, .scales = as + (size_t)t * (np / Q8A_BLOCK) };
	for (size_t i = 0; i < (size_t)PREFILL_T * cols; i++)
		x[i] = frand() * 20;
	printf(",\"prefill_int8act\":{\"matrix\":[%d,%d],\"tokens\":%d", rows, cols, PREFILL_T);
	for (int q = 0; q < 2; q++) {
		struct wmat w = { .type = q ? WT_Q4 : WT_Q8, .rows = rows, .cols = cols,
				  .group_size = q ? 32 : 0 };
		size_t db = q ? q4_data_bytes(rows, cols) : q8_data_bytes(rows, cols);
		void *d = aligned_alloc(64, (db + 63) / 64 * 64);
		float *sc = malloc(sizeof(float) * (q ? q4_nscales(rows, cols, 32) : (size_t)rows));
		quant_matrix(&src, w.type, w.group_size, 0, d, sc);
		w.data = d;
		w.scales = sc;
		double t[2][REPS];
		for (int r = 0; r < REPS; r++)
			for (int k = 0; k < 2; k++) {
				double t0 = time_now();
				prefill_pass(&w, x, a, y[k], k);
				t[k][r] = time_now() - t0;
			}
		struct spread one = summarize(t[0]), tiled = summarize(t[1]);
		int same = !memcmp(y[0], y[1], sizeof(float) * (size_t)PREFILL_T * rows);
		printf(",\"%s\":{\"tiled_ms\":{\"median\":%.3f,\"min\":%.3f},"
		       "\"per_token_ms\":{\"median\":%.3f,\"min\":%.3f},\"speedup\":%.2f,"
		       "\"same_bits\":%s}", q ? "int4" : "int8", tiled.median * 1e3,
		       tiled.min * 1e3, one.median * 1e3, one.min * 1e3,
		       one.median / tiled.median, same ? "true" : "false");
		free(d);
		free(sc);
		if (!same) {
			fprintf(stderr, "quant: the tiled int8-activation kernel changed the bits\n");
			return -1;
		}
	}
	printf("}");
	free(x);
	free(y[0]);
	free(y[1]);
	free(aq);
	free(as);
	return 0;
}

int main(void)
{
	struct model_config c;
	struct err e;
	if (config_load(&c, CONFIG, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	int rows = c.vocab_size, cols = c.hidden_size;
	size_t n = (size_t)rows * cols;
	const struct kernels *k = kernels_for(cpu_detect());

	uint16_t *wb = aligned_alloc(64, n * 2);
	float *x = malloc(sizeof(float) * cols), *y = malloc(sizeof(float) * rows);
	for (int i = 0; i < cols; i++)
		x[i] = frand() * 20;
	struct wmat bf = { .type = WT_BF16, .rows = rows, .cols = cols, .data = wb };
	for (size_t i = 0; i < n; i++)
		wb[i] = f32_to_bf16(frand());

	struct wmat q8 = { .type = WT_Q8, .rows = rows, .cols = cols };
	struct wmat q4 = { .type = WT_Q4, .rows = rows, .cols = cols, .group_size = 32 };
	void *d8 = aligned_alloc(64, q8_data_bytes(rows, cols));
	void *d4 = aligned_alloc(64, q4_data_bytes(rows, cols));
	float *s8 = malloc(sizeof(float) * rows), *s4 = malloc(sizeof(float) * q4_nscales(rows, cols, 32));
	quant_matrix(&bf, WT_Q8, 0, 0, d8, s8);
	quant_matrix(&bf, WT_Q4, 32, 0, d4, s4);
	q8.data = d8;
	q8.scales = s8;
	q4.data = d4;
	q4.scales = s4;

	struct membw mb;
	if (membw_measure(&mb, 1, MEMBW_BYTES_DEFAULT, MEMBW_REPS_DEFAULT, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	double bw = mb.gbs.max;
	struct spread tb = time_matmul(k, &bf, x, y);
	struct spread t8 = time_matmul(k, &q8, x, y);
	struct spread t4 = time_matmul(k, &q4, x, y);
	printf("{\"bench\":\"quant\",\"matrix\":[%d,%d],\"simd\":\"%s\",\"threads\":1,"
	       "\"read_gb_s\":%.2f,", rows, cols, cpu_level_name(k->level), bw);
	report("bf16", tb, wmat_bytes(&bf), bw, 0);
	report("int8", t8, wmat_bytes(&q8), bw, 0);
	report("int4", t4, wmat_bytes(&q4), bw, !quant_has_vnni());
	if (quant_has_vnni()) {
		int np = q8a_padded(cols);
		struct q8act a = { .q = malloc((size_t)np), .scales = malloc(sizeof(float) * (np / Q8A_BLOCK)) };
		double t[REPS];
		for (int r = 0; r < REPS; r++) {
			double t0 = time_now();
			q8a_quantize(x, cols, &a);
			quant_matvec_q8a(1, &q8, &a, y, 0, rows);
			t[r] = time_now() - t0;
		}
		report("int8_vnni_int8act", summarize(t), wmat_bytes(&q8), bw, 1);
		if (prefill(&c, &bf) < 0)
			return 1;
	}
	printf("}\n");
	return 0;
}
