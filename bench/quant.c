/* bench/quant: the decode matvec of the largest matrix of Qwen2.5-0.5B (the
 * tied LM head, vocab x hidden from data/qwen2.5-0.5b-instruct/config.json)
 * stored as bf16, int8 and int4 (group 32), one thread, against this
 * machine's single-thread read bandwidth.
 *
 * Each matrix is far larger than the caches, so every pass streams it from
 * DRAM. For each storage: the best and the median of REPS passes, in
 * milliseconds, and the effective bandwidth (bytes of weights and scales
 * read / best time) as a fraction of the single-thread read bandwidth
 * (bench/harness/membw.h, measured in the same run): with float inputs
 * (the exact mode) and with int8 activations on the tiled layout
 * (lib/kernels/qtile.h), the input quantized inside the timing.
 *
 * Prefill too: PREFILL_T inputs through the intermediate x hidden matrix
 * (a layer's gate projection, in cache) as int8 and int4 tiles with int8
 * activations, in G multiply-adds per second. One JSON line on stdout;
 * asserts nothing.
 *
 *   make bench        (appends the line to bench/results.jsonl)
 */
#include "core/bf16.h"
#include "format/config.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "kernels/qtile.h"
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


/* w (row-major) tiled, in memory the caller frees. */
static struct wmat tiled(const struct wmat *w)
{
	struct wmat t;
	void *d = aligned_alloc(64, qtile_bytes(w->type, w->rows, w->cols, qtile_scales_for(w)));
	qtile_pack(w, d, &t);
	return t;
}

/* T inputs through w (tiled) with int8 activations, quantized inside. */
static struct spread time_a8(const struct kernels *k, const struct wmat *w, const float *x,
			     struct q8act *a, float *y, int T)
{
	double t[REPS];
	for (int r = 0; r < REPS; r++) {
		double t0 = time_now();
		for (int i = 0; i < T; i++)
			k->q8a_quantize(x + (size_t)i * w->cols, w->cols, &a[i]);
		kern_matmul(k, &(struct kern_mm){ .y = y, .ldy = w->rows, .w = w, .r0 = 0,
			.r1 = w->rows, .T = T, .xa = a });
		t[r] = time_now() - t0;
	}
	return summarize(t);
}

/* The prefill part of the record (see the top): "prefill_int8act":{...}. */
static void prefill(const struct kernels *k, const struct model_config *c, const struct wmat *src_all)
{
	int rows = c->intermediate_size, cols = c->hidden_size;
	struct wmat src = *src_all;  /* the first rows of the big bf16 matrix */
	src.rows = rows;
	float *x = malloc(sizeof(float) * (size_t)PREFILL_T * cols);
	float *y = malloc(sizeof(float) * (size_t)PREFILL_T * rows);
	struct q8act *a = q8a_alloc(cols, PREFILL_T);
	for (size_t i = 0; i < (size_t)PREFILL_T * cols; i++)
		x[i] = frand() * 20;
	printf(",\"prefill_int8act\":{\"matrix\":[%d,%d],\"tokens\":%d", rows, cols, PREFILL_T);
	for (int q = 0; q < 2; q++) {
		struct wmat w = { .type = q ? WT_Q4 : WT_Q8, .rows = rows, .cols = cols,
				  .group_size = q ? 32 : 0 };
		void *d = aligned_alloc(64, (q8_data_bytes(rows, cols) + 63) / 64 * 64);
		float *sc = malloc(sizeof(float) * q4_nscales(rows, cols, 32));
		quant_matrix(&src, w.type, w.group_size, 0, d, sc);
		w.data = d;
		w.scales = sc;
		struct wmat t = tiled(&w);
		struct spread tm = time_a8(k, &t, x, a, y, PREFILL_T);
		double macs = (double)rows * cols * PREFILL_T;
		printf(",\"%s\":{\"median_ms\":%.3f,\"min_ms\":%.3f,\"gmacs\":%.1f}",
		       q ? "int4" : "int8", tm.median * 1e3, tm.min * 1e3, macs / tm.min / 1e9);
		free(d), free(sc), free((void *)t.data);
	}
	printf("}");
	free(x), free(y), free(a);
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
	report("int4", t4, wmat_bytes(&q4), bw, 0);
	struct q8act *a = q8a_alloc(cols, 1);
	struct wmat t8w = tiled(&q8), t4w = tiled(&q4);
	report("int8_int8act", time_a8(k, &t8w, x, a, y, 1), wmat_bytes(&t8w), bw, 0);
	report("int4_int8act", time_a8(k, &t4w, x, a, y, 1), wmat_bytes(&t4w), bw, 1);
	printf(",\"int8act_kernel\":\"%s\"", k->level == CPU_AVX512 && kern_has_vnni()
	       ? "vnni" : k->level >= CPU_AVX2 ? "avx2" : "scalar");
	prefill(k, &c, &bf);
	printf("}\n");
	return 0;
}
