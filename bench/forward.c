/* bench/forward: decode and prefill speed of the forward pass on a
 * synthetic Qwen2.5-0.5B-Instruct, against this machine's measured memory
 * bandwidth. Asserts nothing; prints one JSON line per configuration.
 *
 * The synthetic model has exactly the real shapes (from
 * data/qwen2.5-0.5b-instruct/config.json: 290 tensors, 494,032,768
 * parameters, bf16, about 988 MB) and random weights: timing depends on
 * shapes, not values. It is written once into
 * ${XDG_CACHE_HOME:-~/.cache}/qwenpipe/synthetic-qwen2.5-0.5b-instruct-HASH/
 * (bench/harness/synthetic.h; never in the repository) and reused.
 *
 * For each configuration (bf16 through the mapping, bf16 copied into
 * anonymous memory, float32 widened; 1 and 2 threads): decode, ms per token
 * (median and min of DECODE_STEPS steps after a warm-up) and prefill of 64
 * tokens (tokens/s, best and median of PREFILL_REPS). Bandwidth: a read-only
 * streaming sum over a 1 GiB buffer (bench/harness/membw.h; the L3 here is 260 MiB),
 * best of 5, on 1 and 2 threads. Decode is reported as a fraction of the
 * bandwidth limit: weight bytes read per token / bandwidth. First, one
 * prefill-sized product (64 x 896 by 896 x 512) on one thread: OpenBLAS
 * sgemm against our f32 and bf16 kernels, in GFLOP/s.
 *
 *   make bench                      (all benchmarks; appends to bench/results.jsonl)
 *   build/bench/forward [--quick | --gemm]   (this one; --quick: bf16
 *                                   copied only; --gemm: the product only)
 */
#include "harness/benchrun.h"
#include "core/bf16.h"
#include "kernels/btile.h"
#include "model/forward.h"
#include "harness/membw.h"
#include "model/model.h"
#include "harness/synthetic.h"
#include "core/timing.h"

#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DECODE_STEPS = 16, PREFILL = 64, PREFILL_REPS = 2 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static _Noreturn void fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "bench/forward: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

/* The synthetic model (bench/harness/synthetic.h), written on the first run. */
static void synthetic_dir(char *dir, size_t cap)
{
	struct synthetic syn;
	struct err e;
	if (synthetic_ensure(&syn, SYNTHETIC_CONFIG, NULL, NULL, &e) < 0)
		fail("%s", e.msg);
	snprintf(dir, cap, "%s", syn.dir);
}

/* GB/s of a read-only stream over 1 GiB, best of 5 (bench/harness/membw.h). */
static double bandwidth(int threads)
{
	struct membw r;
	struct err e;
	if (membw_measure(&r, threads, MEMBW_BYTES_DEFAULT, MEMBW_REPS_DEFAULT, &e) < 0)
		fail("%s", e.msg);
	return r.gbs.max;
}

/* ---- one prefill-sized product: ours against OpenBLAS ---- */

/* GFLOP/s of Y[64 x 512] = X[64 x 896] W^T, one thread, best of 300: a
 * slice of a projection small enough (about 1 ms) that the best repetition
 * ran without being preempted on a shared machine:
 * OpenBLAS sgemm, our f32 kernel, our bf16 kernel, and our bf16 kernel with
 * bf16 activations (dot_b16 on the tiles of lib/kernels/btile.h, the
 * inputs rounded and the weights tiled once beforehand; K is even, so the
 * inputs need no pad). */
static void gemm_gflops(double out[4])
{
	enum { M = PREFILL, N = 512, K = 896, REPS = 300 };
	float *x = calloc((size_t)M * K, 4), *w = calloc((size_t)N * K, 4),
	      *y = calloc((size_t)M * N, 4);
	uint16_t *wb = calloc((size_t)N * K, 2), *xb = calloc((size_t)M * K, 2);
	void *tiles = aligned_alloc(64, btile_bytes(N, K));
	if (!x || !w || !y || !wb || !xb || !tiles)
		fail("out of memory for the %s product", "64 x 896 by 896 x 512");
	for (int i = 0; i < M * K; i++) {
		x[i] = (float)(i % 7) * 0.1f;
		xb[i] = f32_to_bf16(x[i]);
	}
	for (int i = 0; i < N * K; i++) {
		wb[i] = (uint16_t)(0x3c00 + i % 127);  /* bf16 0.0078 .. 0.0156 */
		w[i] = (float)(i % 5) * 0.1f;
	}
	const struct kernels *k = kernels_for(cpu_level_env(NULL));
	const struct wmat wf = { .type = WT_F32, .rows = N, .cols = K, .data = w };
	const struct wmat wbf = { .type = WT_BF16, .rows = N, .cols = K, .data = wb };
	struct wmat wbt;
	btile_pack_rows(&wbf, tiles, 0, N);
	btile_view(&wbf, tiles, &wbt);
	openblas_set_num_threads(1);
	double best[4] = { 1e9, 1e9, 1e9, 1e9 };
	for (int r = 0; r < REPS; r++) {
		double t[5];
		t[0] = time_now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, x, K, w, K,
			    0, y, N);
		t[1] = time_now();
		kern_matmul(k, &(struct kern_mm){ .y = y, .ldy = N, .w = &wf, .r0 = 0, .r1 = N,
						  .x = x, .ldx = K, .T = M });
		t[2] = time_now();
		kern_matmul(k, &(struct kern_mm){ .y = y, .ldy = N, .w = &wbf, .r0 = 0, .r1 = N,
						  .x = x, .ldx = K, .T = M });
		t[3] = time_now();
		kern_matmul(k, &(struct kern_mm){ .y = y, .ldy = N, .w = &wbt, .r0 = 0, .r1 = N,
						  .x = x, .ldx = K, .T = M, .xb = xb });
		t[4] = time_now();
		for (int i = 0; i < 4; i++)
			best[i] = t[i + 1] - t[i] < best[i] ? t[i + 1] - t[i] : best[i];
	}
	for (int i = 0; i < 4; i++)
		out[i] = 2.0 * M * N * K / best[i] / 1e9;
	free(x);
	free(w);
	free(y);
	free(wb);
	free(xb);
	free(tiles);
}

/* ---- forward ---- */

static int sink_emit(void *arg, int pos, const float *lg, struct err *e)
{
	*(float *)arg += lg[0];
	(void)pos;
	(void)e;
	return 0;
}

struct result {
	double decode_med, decode_min, prefill_best, prefill_med, load_s;
	size_t bytes_per_token;
};

static void run(const char *dir, struct model_opts mo, int threads,
		struct result *r)
{
	struct model m;
	struct forward f;
	struct err e;
	double t0 = time_now();
	if (model_load(&m, dir, &mo, &e) < 0)
		fail("%s", e.msg);
	r->load_s = time_now() - t0;
	struct forward_opts fo = { .threads = threads, .ctx = 256,
				   .level = cpu_level_env(NULL) };
	if (forward_init(&f, &m, &fo, &e) < 0)
		fail("%s", e.msg);
	int ids[PREFILL];
	for (int i = 0; i < PREFILL; i++)
		ids[i] = (i * 7919) % m.cfg.vocab_size;
	float sink = 0;
	/* Warm-up: every weight page touched once. */
	forward_eval(&f, ids, 4, 0, sink_emit, &sink, &e);
	forward_eval(&f, ids + 4, 1, 0, sink_emit, &sink, &e);
	double dt[DECODE_STEPS];
	for (int i = 0; i < DECODE_STEPS; i++) {
		double s = time_now();
		forward_eval(&f, ids + 5 + i, 1, 0, sink_emit, &sink, &e);
		dt[i] = (time_now() - s) * 1e3;
	}
	qsort(dt, DECODE_STEPS, sizeof dt[0], cmp_double);
	r->decode_min = dt[0];
	r->decode_med = dt[DECODE_STEPS / 2];
	double pt[PREFILL_REPS];
	for (int i = 0; i < PREFILL_REPS; i++) {
		forward_reset(&f);
		double s = time_now();
		forward_eval(&f, ids, PREFILL, 0, sink_emit, &sink, &e);
		pt[i] = PREFILL / (time_now() - s);
	}
	qsort(pt, PREFILL_REPS, sizeof pt[0], cmp_double);
	r->prefill_best = pt[PREFILL_REPS - 1];
	r->prefill_med = pt[PREFILL_REPS / 2];
	/* Every matrix is read once per token, except an untied embedding, of
	 * which one row is. */
	size_t embed = (size_t)m.w.embed.rows * m.w.embed.cols *
		       (m.w.embed.type == WT_BF16 ? 2 : 4);
	r->bytes_per_token = m.weight_bytes - (m.cfg.tie_embeddings ? 0 : embed);
	forward_free(&f);
	model_free(&m);
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	int gemm_only = argc > 1 && strcmp(argv[1], "--gemm") == 0;
	char dir[4096];
	synthetic_dir(dir, sizeof dir);
	/* The machine is shared: the load goes with the figures. */
	struct bench_machine mc;
	bench_machine(&mc);
	const char *commit = mc.commit, *cpu = mc.cpu, *date = mc.date;
	double gf[4];
	gemm_gflops(gf);
	double load = bench_loadavg();
	printf("{\"bench\": \"gemm\", \"date\": \"%s\", \"commit\": \"%s\", \"cpu\": "
	       "\"%s\", \"load1\": %.2f, \"shape\": \"64x896 . 896x512\", \"threads\": 1, "
	       "\"openblas\": \"%s\", \"openblas_gflops\": %.1f, \"own_f32_gflops\": %.1f, "
	       "\"own_bf16_gflops\": %.1f, \"own_bf16_b16act_gflops\": %.1f, \"b16act\": "
	       "\"%s\", \"kernels\": \"%s\"}\n", date, commit, cpu, load,
	       openblas_get_corename(), gf[0], gf[1], gf[2], gf[3],
	       cpu_level_env(NULL) == CPU_AVX512 && kern_has_dpbf16() ? "vdpbf16ps"
								       : "scalar reference",
	       cpu_level_name(cpu_level_env(NULL)));
	if (gemm_only)
		return 0;
	double bw[3] = { 0, bandwidth(1), bandwidth(2) };
	struct { const char *weights; struct model_opts mo; } cfgs[] = {
		{ "bf16 copied", { 0, 0 } },
		{ "bf16 mapped", { 0, 1 } },
		{ "f32", { 1, 0 } },
	};
	for (size_t c = 0; c < (quick ? 1 : sizeof cfgs / sizeof cfgs[0]); c++)
		for (int t = 1; t <= 2; t++) {
			load = bench_loadavg();
			struct result r;
			run(dir, cfgs[c].mo, t, &r);
			double limit_ms = r.bytes_per_token / (bw[t] * 1e9) * 1e3;
			printf("{\"bench\": \"forward\", \"date\": \"%s\", \"commit\": \"%s\", "
			       "\"cpu\": \"%s\", \"load1\": %.2f, \"model\": \"synthetic "
			       "Qwen2.5-0.5B\", \"weights\": \"%s\", \"threads\": %d, "
			       "\"kernels\": \"%s\", \"decode_ms_median\": %.2f, "
			       "\"decode_ms_min\": %.2f, \"prefill64_tok_s_best\": %.1f, "
			       "\"prefill64_tok_s_median\": %.1f, \"bytes_per_token\": %zu, "
			       "\"bandwidth_gbs\": %.1f, \"decode_limit_ms\": %.2f, "
			       "\"decode_fraction_of_limit\": %.2f, \"load_s\": %.2f}\n",
			       date, commit, cpu, load, cfgs[c].weights, t,
			       cpu_level_name(cpu_level_env(NULL)), r.decode_med, r.decode_min,
			       r.prefill_best, r.prefill_med, r.bytes_per_token, bw[t],
			       limit_ms, limit_ms / r.decode_min, r.load_s);
			fflush(stdout);
		}
	return 0;
}
