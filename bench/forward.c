/* bench/forward: decode and prefill speed of the forward pass on a
 * synthetic Qwen2.5-0.5B-Instruct, against this machine's measured memory
 * bandwidth. Asserts nothing; prints one JSON line per configuration.
 *
 * The synthetic model has exactly the real shapes (from
 * data/qwen2.5-0.5b-instruct/config.json: 290 tensors, 494,032,768
 * parameters, bf16, about 988 MB) and random weights: timing depends on
 * shapes, not values. It is written once into
 * ${XDG_CACHE_HOME:-~/.cache}/qwenpipe/synthetic-qwen2.5-0.5b/ (temp file,
 * then rename; never in the repository) and reused.
 *
 * For each configuration (bf16 through the mapping, bf16 copied into
 * anonymous memory, float32 widened; 1 and 2 threads; for float32 prefill
 * also OpenBLAS's own threads instead of the pool): decode, ms per token
 * (median and min of DECODE_STEPS steps after a warm-up) and prefill of 64
 * tokens (tokens/s, best and median of PREFILL_REPS). Bandwidth: a read-only
 * AVX2 streaming sum over a 1 GiB buffer (larger than the 260 MiB L3 here),
 * best of 5, on 1 and 2 threads. Decode is reported as a fraction of the
 * bandwidth limit: weight bytes read per token / bandwidth. First, one
 * prefill-sized product (64 x 896 by 896 x 4864) on one thread: OpenBLAS
 * sgemm against our f32 and bf16 kernels, in GFLOP/s.
 *
 *   make bench                      (all benchmarks; appends to bench/results.jsonl)
 *   build/bench/forward [--quick]   (this one; --quick: bf16 copied only)
 */
#include "config.h"
#include "forward.h"
#include "manifest.h"
#include "model.h"
#include "pool.h"

#include <cJSON.h>
#include <cblas.h>
#include <errno.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REAL_CONFIG "data/qwen2.5-0.5b-instruct/config.json"
enum { DECODE_STEPS = 16, PREFILL = 64, PREFILL_REPS = 2, BW_BYTES = 1 << 30 };

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

/* ---- the synthetic model ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint16_t rand_bf16(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	/* Uniform-ish in +-0.03: sign, exponent 2^-6..2^-9, random mantissa. */
	uint16_t sign = (uint16_t)((rng >> 63) << 15);
	uint16_t expo = (uint16_t)(121 + ((rng >> 40) & 3));
	return (uint16_t)(sign | expo << 7 | ((rng >> 20) & 0x7f));
}

static int copy_file(const char *from, const char *to)
{
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	char buf[4096];
	size_t n;
	int ok = a && b;
	while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0)
		ok = fwrite(buf, 1, n, b) == n;
	if (a)
		fclose(a);
	if (b && fclose(b) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* Writes dir/model.safetensors (temp file, rename) and dir/config.json. */
static void make_synthetic(const char *dir)
{
	struct model_config c;
	struct manifest m;
	struct err e;
	if (config_load(&c, REAL_CONFIG, &e) < 0)
		fail("%s", e.msg);
	manifest_init(&m);
	if (manifest_build(&m, &c, &e) < 0)
		fail("%s", e.msg);
	cJSON *h = cJSON_CreateObject();
	uint64_t off = 0;
	for (int i = 0; i < m.n; i++) {
		cJSON *t = cJSON_AddObjectToObject(h, m.t[i].name);
		cJSON_AddStringToObject(t, "dtype", "BF16");
		cJSON *s = cJSON_AddArrayToObject(t, "shape");
		for (int d = 0; d < m.t[i].ndim; d++)
			cJSON_AddItemToArray(s, cJSON_CreateNumber((double)m.t[i].shape[d]));
		uint64_t bytes = 2 * mtensor_params(&m.t[i]);
		cJSON *o = cJSON_AddArrayToObject(t, "data_offsets");
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + bytes)));
		off += bytes;
	}
	char *json = cJSON_PrintUnformatted(h);
	size_t jl = strlen(json), padded = (jl + 8 + 63) / 64 * 64 - 8;
	char path[4200], tmp[4300];
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "wb");
	if (!f)
		fail("%s: cannot create", tmp);
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)padded >> (8 * i));
	int ok = fwrite(len, 1, 8, f) == 8 && fwrite(json, 1, jl, f) == jl;
	for (size_t i = jl; ok && i < padded; i++)
		ok = fputc(' ', f) != EOF;
	enum { CHUNK = 1 << 20 };
	uint16_t *buf = malloc(2 * CHUNK);
	for (int i = 0; ok && i < m.n; i++) {
		int norm = strstr(m.t[i].name, "norm") != NULL;
		for (uint64_t left = mtensor_params(&m.t[i]); ok && left > 0;) {
			size_t n = left < CHUNK ? (size_t)left : CHUNK;
			for (size_t k = 0; k < n; k++)
				buf[k] = norm ? 0x3f80 : rand_bf16();  /* norms: 1.0 */
			ok = fwrite(buf, 2, n, f) == n;
			left -= n;
		}
	}
	if (fclose(f) != 0 || !ok) {
		unlink(tmp);
		fail("%s: write error", tmp);
	}
	char cfg[4200];
	snprintf(cfg, sizeof cfg, "%s/config.json", dir);
	if (copy_file(REAL_CONFIG, cfg) < 0 || rename(tmp, path) < 0)
		fail("%s: cannot put the model in place", dir);
	free(buf);
	free(json);
	cJSON_Delete(h);
	manifest_free(&m);
}

static void synthetic_dir(char *dir, size_t cap)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char base[4000];
	if (xdg && *xdg)
		snprintf(base, sizeof base, "%s/qwenpipe", xdg);
	else
		snprintf(base, sizeof base, "%s/.cache/qwenpipe", home ? home : "/tmp");
	snprintf(dir, cap, "%s/synthetic-qwen2.5-0.5b", base);
	char parent[4000];
	snprintf(parent, sizeof parent, "%s", base);
	*strrchr(parent, '/') = 0;
	mkdir(parent, 0755);
	mkdir(base, 0755);
	mkdir(dir, 0755);
	char st[4200];
	snprintf(st, sizeof st, "%s/model.safetensors", dir);
	if (access(st, R_OK) != 0) {
		double t0 = now();
		make_synthetic(dir);
		fprintf(stderr, "bench/forward: wrote %s in %.1f s\n", st, now() - t0);
	}
}

/* ---- memory bandwidth ---- */

struct bw_job {
	const unsigned char *buf;
	size_t bytes;
	uint64_t sink[64];
};

__attribute__((target("avx2"))) static uint64_t stream_sum(const unsigned char *p, size_t n)
{
	__m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
	for (size_t i = 0; i + 128 <= n; i += 128) {
		a = _mm256_add_epi64(a, _mm256_load_si256((const __m256i *)(p + i)));
		b = _mm256_add_epi64(b, _mm256_load_si256((const __m256i *)(p + i + 32)));
		c = _mm256_add_epi64(c, _mm256_load_si256((const __m256i *)(p + i + 64)));
		d = _mm256_add_epi64(d, _mm256_load_si256((const __m256i *)(p + i + 96)));
	}
	a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
	uint64_t t[4];
	_mm256_storeu_si256((__m256i *)t, a);
	return t[0] + t[1] + t[2] + t[3];
}

static void bw_part(void *arg, int i, int n)
{
	struct bw_job *j = arg;
	int lo, hi;
	pool_split((int)(j->bytes >> 12), i, n, 1, &lo, &hi);
	j->sink[i] = stream_sum(j->buf + ((size_t)lo << 12), (size_t)(hi - lo) << 12);
}

/* GB/s of a read-only stream over 1 GiB, best of 5. */
static double bandwidth(int threads)
{
	struct err e;
	struct pool *p = pool_create(threads, &e);
	struct bw_job j = { aligned_alloc(64, BW_BYTES), BW_BYTES, { 0 } };
	memset((void *)j.buf, 1, BW_BYTES);
	double best = 0;
	for (int r = 0; r < 5; r++) {
		double t0 = now();
		pool_run(p, bw_part, &j);
		double gbs = BW_BYTES / (now() - t0) / 1e9;
		best = gbs > best ? gbs : best;
	}
	free((void *)j.buf);
	pool_destroy(p);
	return best;
}

/* ---- one prefill-sized product: ours against OpenBLAS ---- */

/* GFLOP/s of Y[64 x 4864] = X[64 x 896] W^T, one thread, best of 15:
 * OpenBLAS sgemm, our f32 kernel, our bf16 kernel. */
static void gemm_gflops(double out[3])
{
	enum { M = PREFILL, N = 4864, K = 896 };
	float *x = calloc((size_t)M * K, 4), *w = calloc((size_t)N * K, 4),
	      *y = calloc((size_t)M * N, 4);
	uint16_t *wb = calloc((size_t)N * K, 2);
	for (int i = 0; i < M * K; i++)
		x[i] = (float)(i % 7) * 0.1f;
	for (int i = 0; i < N * K; i++) {
		wb[i] = rand_bf16();
		w[i] = (float)(i % 5) * 0.1f;
	}
	const struct kernels *k = kernels_for(cpu_level_env(NULL));
	openblas_set_num_threads(1);
	double best[3] = { 1e9, 1e9, 1e9 };
	for (int r = 0; r < 15; r++) {
		double t[4];
		t[0] = now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, x, K, w, K,
			    0, y, N);
		t[1] = now();
		k->matmul_f32(y, N, w, K, 0, N, x, K, M);
		t[2] = now();
		k->matmul_bf16(y, N, wb, K, 0, N, x, K, M);
		t[3] = now();
		for (int i = 0; i < 3; i++)
			best[i] = t[i + 1] - t[i] < best[i] ? t[i + 1] - t[i] : best[i];
	}
	for (int i = 0; i < 3; i++)
		out[i] = 2.0 * M * N * K / best[i] / 1e9;
	free(x);
	free(w);
	free(y);
	free(wb);
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

static void run(const char *dir, struct model_opts mo, int threads, enum fwd_gemm gemm,
		struct result *r)
{
	struct model m;
	struct forward f;
	struct err e;
	double t0 = now();
	if (model_load(&m, dir, &mo, &e) < 0)
		fail("%s", e.msg);
	r->load_s = now() - t0;
	struct forward_opts fo = { .threads = threads, .ctx = 256, .gemm = gemm,
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
		double s = now();
		forward_eval(&f, ids + 5 + i, 1, 0, sink_emit, &sink, &e);
		dt[i] = (now() - s) * 1e3;
	}
	qsort(dt, DECODE_STEPS, sizeof dt[0], cmp_double);
	r->decode_min = dt[0];
	r->decode_med = dt[DECODE_STEPS / 2];
	double pt[PREFILL_REPS];
	for (int i = 0; i < PREFILL_REPS; i++) {
		forward_reset(&f);
		double s = now();
		forward_eval(&f, ids, PREFILL, 0, sink_emit, &sink, &e);
		pt[i] = PREFILL / (now() - s);
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

/* The machine is shared: the load goes with the figures. */
static double load1(void)
{
	double load = -1;
	FILE *la = fopen("/proc/loadavg", "r");
	if (la) {
		if (fscanf(la, "%lf", &load) != 1)
			load = -1;
		fclose(la);
	}
	return load;
}

static void cmd(const char *c, char *out, size_t cap)
{
	FILE *p = popen(c, "r");
	out[0] = 0;
	if (p) {
		if (!fgets(out, (int)cap, p))
			out[0] = 0;
		pclose(p);
	}
	out[strcspn(out, "\n")] = 0;
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	char dir[4096];
	synthetic_dir(dir, sizeof dir);
	char commit[64], cpu[256], date[64];
	cmd("git rev-parse --short HEAD 2>/dev/null", commit, sizeof commit);
	cmd("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'", cpu, sizeof cpu);
	cmd("date -u +%Y-%m-%dT%H:%M:%SZ", date, sizeof date);
	double bw[3] = { 0, bandwidth(1), bandwidth(2) }, gf[3];
	gemm_gflops(gf);
	double load = load1();
	printf("{\"bench\": \"gemm\", \"date\": \"%s\", \"commit\": \"%s\", \"cpu\": "
	       "\"%s\", \"load1\": %.2f, \"shape\": \"64x896 . 896x4864\", \"threads\": 1, "
	       "\"openblas\": \"%s\", \"openblas_gflops\": %.1f, \"own_f32_gflops\": %.1f, "
	       "\"own_bf16_gflops\": %.1f, \"kernels\": \"%s\"}\n", date, commit, cpu, load,
	       openblas_get_corename(), gf[0], gf[1], gf[2],
	       cpu_level_name(cpu_level_env(NULL)));
	struct { const char *weights; struct model_opts mo; enum fwd_gemm gemm; } cfgs[] = {
		{ "bf16 copied", { 0, 0 }, FWD_GEMM_OWN },
		{ "bf16 mapped", { 0, 1 }, FWD_GEMM_OWN },
		{ "f32", { 1, 0 }, FWD_GEMM_OWN },
		{ "f32, OpenBLAS per worker", { 1, 0 }, FWD_GEMM_BLAS },
		{ "f32, OpenBLAS threads", { 1, 0 }, FWD_GEMM_BLAS_THREADS },
	};
	for (size_t c = 0; c < (quick ? 1 : sizeof cfgs / sizeof cfgs[0]); c++)
		for (int t = 1; t <= 2; t++) {
			if (cfgs[c].gemm == FWD_GEMM_BLAS_THREADS && t == 1)
				continue;
			load = load1();
			struct result r;
			run(dir, cfgs[c].mo, t, cfgs[c].gemm, &r);
			double limit_ms = r.bytes_per_token / (bw[t] * 1e9) * 1e3;
			printf("{\"bench\": \"forward\", \"date\": \"%s\", \"commit\": \"%s\", "
			       "\"cpu\": \"%s\", \"load1\": %.2f, \"model\": \"synthetic "
			       "Qwen2.5-0.5B\", \"weights\": \"%s\", \"threads\": %d, "
			       "\"kernels\": \"%s\", \"openblas\": \"%s\", \"decode_ms_median\": %.2f, "
			       "\"decode_ms_min\": %.2f, \"prefill64_tok_s_best\": %.1f, "
			       "\"prefill64_tok_s_median\": %.1f, \"bytes_per_token\": %zu, "
			       "\"bandwidth_gbs\": %.1f, \"decode_limit_ms\": %.2f, "
			       "\"decode_fraction_of_limit\": %.2f, \"load_s\": %.2f}\n",
			       date, commit, cpu, load, cfgs[c].weights, t,
			       cpu_level_name(cpu_level_env(NULL)), openblas_get_corename(),
			       r.decode_med, r.decode_min,
			       r.prefill_best, r.prefill_med, r.bytes_per_token, bw[t],
			       limit_ms, limit_ms / r.decode_min, r.load_s);
			fflush(stdout);
		}
	return 0;
}
