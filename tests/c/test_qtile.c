/* qtile: the tiled layout and the int8-activation kernels
 * (lib/kernels/qtile.h).
 *
 * - Packing keeps every code and scale: qtile_code / qtile_scale read back
 *   what the row-major matrix holds, for every kind of scales.
 * - The scalar reference against an independent computation written here
 *   from the row-major matrix and the order's definition (exact integer
 *   block sums in 64 bits, the float steps in the stated order): bitwise.
 * - The same against float64 sums of the dequantized products: within
 *   float32 rounding of the block fmas (a relative 1e-5 of the sum of
 *   magnitudes), which a misplaced scale exceeds by orders of magnitude.
 * - Every level this CPU has gives the reference's bits, for T = 1 .. 11
 *   and row ranges that start and end inside a tile.
 * - The same for GGUF's Q5_0, Q5_1 and IQ4 tiles, put block by block. */
#include "kernels/matmul.h"
#include "kernels/qtile.h"
#include "kernels/qtile_isa.h"
#include "kernels/quant.h"
#include "core/bf16.h"
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float frand(void)  /* uniform in [-1, 1) */
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

/* A row-major matrix of random codes and scales: int8 with a scale per row
 * (group 0), or a scale per 32 columns for int8 and int4; half_scales
 * makes every scale exactly a half (QT_F16). */
struct mat {
	struct wmat w;
	void *data;
	float *scales;
};

static void mat_make(struct mat *m, enum wtype t, int rows, int cols, int group,
		     int half_scales)
{
	size_t n = (size_t)rows * cols, ns = group ? n / group : (size_t)rows;
	m->data = calloc(t == WT_Q4 ? n / 2 : n, 1);
	m->scales = malloc(sizeof(float) * ns);
	for (size_t i = 0; i < ns; i++) {
		float s = (frand() + 1.5f) * 0.01f;
		m->scales[i] = half_scales ? f16_to_f32(f32_to_f16(s)) : s * 1.0000001f;
	}
	m->w = (struct wmat){ .type = t, .rows = rows, .cols = cols, .data = m->data,
			      .scales = m->scales, .group_size = group };
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++) {
			int q = (int)floorf((frand() + 1) * (t == WT_Q4 ? 8 : 127.5f)) -
				(t == WT_Q4 ? 8 : 127);
			if (t == WT_Q4) {
				uint8_t *row = (uint8_t *)m->data + (size_t)r * cols / 2;
				int b = c / 32, j = c % 32;
				uint8_t *byte = &row[b * 16 + j % 16];
				*byte = j < 16 ? (uint8_t)((*byte & 0xf0) | (q + 8))
					       : (uint8_t)((*byte & 15) | (q + 8) << 4);
			} else {
				((int8_t *)m->data)[(size_t)r * cols + c] = (int8_t)q;
			}
		}
}

/* The int8-activation product at level lv, through its kernel table (the
 * scalar reference at CPU_SCALAR). */
static void tmm(enum cpu_level lv, const struct wmat *w, float *y, int ldy, int r0, int r1,
		const struct q8act *a, int T)
{
	kern_matmul(kernels_for(lv), &(struct kern_mm){ .y = y, .ldy = ldy, .w = w, .r0 = r0,
							.r1 = r1, .T = T, .xa = a });
}

/* The order of qtile.h, computed from the row-major matrix. */
static float order(const struct wmat *w, int r, const struct q8act *a)
{
	float acc = 0;
	for (int b = 0; b * 32 < w->cols; b++) {
		int64_t d = 0;
		for (int c = b * 32; c < w->cols && c < b * 32 + 32; c++)
			d += (int64_t)quant_code(w, r, c) * a->q[c];
		float s = a->scales[b];
		if (wmat_grouped(w))
			s *= quant_scale(w, r, b * 32);
		acc = fmaf((float)d, s, acc);
	}
	return wmat_grouped(w) ? acc : acc * w->scales[r];
}

/* T inputs of cols values quantized to int8 (q8a_quantize): random, a
 * few four times larger; or extremes, +-1 only, so every code is +-127. */
static struct q8act *inputs(int cols, int T, int extremes)
{
	float *x = malloc(sizeof(float) * (size_t)cols * (size_t)T);
	for (size_t i = 0; i < (size_t)cols * (size_t)T; i++)
		x[i] = extremes ? (i % 3 ? 1.0f : -1.0f) : frand() * (i % 7 == 0 ? 4.0f : 1.0f);
	struct q8act *a = q8a_alloc(cols, T);
	for (int i = 0; i < T; i++)
		kernels_for(CPU_SCALAR)->q8a_quantize(x + (size_t)i * cols, cols, &a[i]);
	free(x);
	return a;
}

/* Every level this CPU has against the reference's outputs yr (ldy
 * apart), bit for bit, for T = 1 .. Tmax inputs a and the rows cut in
 * three calls that start and end inside tiles; nothing is written past
 * the rows. */
static void check_levels(const struct wmat *w, const struct q8act *a, int Tmax, const float *yr,
			 int ldy, int group)
{
	int rows = w->rows;
	float *y = malloc(sizeof(float) * (size_t)ldy * (size_t)Tmax);
	for (int lv = CPU_SCALAR; lv <= (int)cpu_level_env(NULL); lv++)
		for (int T = 1; T <= Tmax; T++) {
			int lo = rows > 2 ? rows / 3 : 0, hi = rows > 2 ? rows - 1 : rows;
			memset(y, 0xff, sizeof(float) * (size_t)ldy * (size_t)Tmax);
			tmm((enum cpu_level)lv, w, y, ldy, 0, lo, a, T);
			tmm((enum cpu_level)lv, w, y, ldy, lo, hi, a, T);
			tmm((enum cpu_level)lv, w, y, ldy, hi, rows, a, T);
			int same = 1;
			for (int i = 0; i < T; i++)
				same &= !memcmp(y + (size_t)i * ldy, yr + (size_t)i * ldy,
						sizeof(float) * (size_t)rows) &&
					(uint32_t)((int32_t *)y)[(size_t)i * ldy + rows] == 0xffffffffu;
			CHECK(same, "%s %d %dx%d g%d T=%d: not the reference's bits",
			      cpu_level_name((enum cpu_level)lv), w->type, rows, w->cols, group, T);
		}
	free(y);
}

static void check_shape(enum wtype t, int rows, int cols, int group, int half_scales)
{
	struct mat m;
	mat_make(&m, t, rows, cols, group, half_scales);
	enum qtile_scales ks = qtile_scales_for(&m.w);
	CHECK(ks == (!group ? QT_ROW : half_scales ? QT_F16 : QT_F32), "scales kind %d", ks);
	void *tiles = aligned_alloc(64, qtile_bytes(t, rows, cols, ks));
	struct wmat w;
	qtile_pack(&m.w, tiles, &w);
	int same = 1;
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			same &= quant_code(&w, r, c) == quant_code(&m.w, r, c) &&
				quant_scale(&w, r, c) == quant_scale(&m.w, r, c);
	CHECK(same, "pack %d %dx%d g%d: codes or scales changed", t, rows, cols, group);

	enum { TMAX = 11 };
	struct q8act *a = inputs(cols, TMAX, 0);
	int ldy = rows + 3;
	float *yr = malloc(sizeof(float) * (size_t)ldy * TMAX);
	tmm(CPU_SCALAR, &w, yr, ldy, 0, rows, a, TMAX);
	same = 1;
	double worst = 0, bad = 0;
	for (int i = 0; i < TMAX; i++)
		for (int r = 0; r < rows; r++) {
			float want = order(&m.w, r, &a[i]);
			same &= memcmp(&want, &yr[(size_t)i * ldy + r], 4) == 0;
			double sum = 0, mag = 0, mis = 0;
			for (int c = 0; c < cols; c++) {
				double p = (double)quant_scale(&m.w, r, c) * quant_code(&m.w, r, c) *
					   a[i].scales[c / 32] * a[i].q[c];
				sum += p;
				mag += fabs(p);
				/* the scale of the next block (the last: the first) */
				int nb = (cols + 31) / 32, b2 = (c / 32 + 1) % nb;
				mis += (double)quant_scale(&m.w, r, c) * quant_code(&m.w, r, c) *
				       a[i].scales[b2] * a[i].q[c];
			}
			if (mag > 0) {
				worst = fmax(worst, fabs(sum - yr[(size_t)i * ldy + r]) / mag);
				bad = fmax(bad, fabs(mis - yr[(size_t)i * ldy + r]) / mag);
			}
		}
	CHECK(same, "scalar %d %dx%d g%d: not the order's bits", t, rows, cols, group);
	CHECK(worst < 1e-5, "scalar %d %dx%d g%d: %g from the float64 sum", t, rows, cols, group,
	      worst);
	CHECK(cols <= 32 || bad > 1e-3, "%dx%d: a misplaced scale is only %g away", rows, cols, bad);

	check_levels(&w, a, TMAX, yr, ldy, group);
	free(a), free(yr), free(tiles), free(m.data), free(m.scales);
}

/* The codes at the ends of their ranges: int8 -127 .. 127 (and -128, which
 * a GGUF Q8_0 file may hold), activations +-127, so the integer sums reach
 * their extremes without saturating anywhere. */
static void check_extremes(void)
{
	struct mat m;
	for (int t = 0; t < 2; t++) {
		enum wtype type = t ? WT_Q4 : WT_Q8;
		mat_make(&m, type, 16, 64, 32, 1);
		for (int r = 0; r < 16; r++)
			for (int c = 0; c < 64; c++) {
				if (type == WT_Q8)
					((int8_t *)m.data)[r * 64 + c] = (int8_t)(r < 8 ? -128 : 127);
				else
					((uint8_t *)m.data)[r * 32 + c % 32 / 2 + c / 32 * 16] = r < 8 ? 0 : 0xff;
			}
		void *tiles = aligned_alloc(64, qtile_bytes(type, 16, 64, QT_F16));
		struct wmat w;
		qtile_pack(&m.w, tiles, &w);
		float x[64];
		for (int c = 0; c < 64; c++)
			x[c] = c % 3 ? 1.0f : -1.0f;
		x[5] = -1;
		struct q8act *a = q8a_alloc(64, 1);
		kernels_for(CPU_SCALAR)->q8a_quantize(x, 64, a);
		float yr[16], y[16];
		tmm(CPU_SCALAR, &w, yr, 16, 0, 16, a, 1);
		for (int r = 0; r < 16; r++)
			CHECK(yr[r] == order(&m.w, r, a), "extremes %d row %d", type, r);
		for (int lv = CPU_SCALAR; lv <= (int)cpu_level_env(NULL); lv++) {
			tmm((enum cpu_level)lv, &w, y, 16, 0, 16, a, 1);
			CHECK(!memcmp(y, yr, sizeof y), "extremes %d at %s", type,
			      cpu_level_name((enum cpu_level)lv));
		}
		free(a), free(tiles), free(m.data), free(m.scales);
	}
}

/* A matrix of GGUF's types put block by block (Q5_0, Q5_1, IQ4) against
 * what it was made from: q its codes (the canonical ones: u - 16, u, the
 * IQ4 level of u), ws its block scales and wm Q5_1's mins (else NULL), v
 * its values as gguf-py computes them. Checked: the rows read back as v;
 * the scalar reference against the order of qtile.h computed here (block
 * sums in 64 bits, the min's code sum from the activations); within
 * float32 rounding of the float64 sum of the dequantized products; and
 * every level against the reference, bit for bit, for T = 1 .. 11 and row
 * ranges cut inside tiles. */
static void check_order(const struct wmat *w, const int *q, const float *ws, const float *wm,
			const float *v, int extremes)
{
	int rows = w->rows, cols = w->cols, nb = cols / 32, same = 1;
	float *row = malloc(sizeof(float) * (size_t)cols);
	for (int r = 0; r < rows; r++) {
		kern_row(w, r, row);
		same &= !memcmp(row, v + (size_t)r * cols, sizeof(float) * (size_t)cols);
	}
	CHECK(same, "type %d %dx%d: the rows are not the values put", w->type, rows, cols);

	enum { TMAX = 11 };
	struct q8act *a = inputs(cols, TMAX, extremes);
	int ldy = rows + 3;
	float *yr = malloc(sizeof(float) * (size_t)ldy * TMAX);
	tmm(CPU_SCALAR, w, yr, ldy, 0, rows, a, TMAX);
	same = 1;
	double worst = 0;
	for (int i = 0; i < TMAX; i++)
		for (int r = 0; r < rows; r++) {
			float acc = 0;
			double sum = 0, mag = 0;
			for (int b = 0; b < nb; b++) {
				int64_t isum = 0, asum = 0;
				for (int c = 32 * b; c < 32 * b + 32; c++) {
					isum += (int64_t)q[(size_t)r * cols + c] * a[i].q[c];
					asum += a[i].q[c];
					double pv = (double)v[(size_t)r * cols + c] * a[i].scales[b] * a[i].q[c];
					sum += pv;
					mag += fabs(pv);
				}
				acc = fmaf((float)isum, a[i].scales[b] * ws[r * nb + b], acc);
				if (wm)
					acc = fmaf((float)asum, a[i].scales[b] * wm[r * nb + b], acc);
			}
			float got = yr[(size_t)i * ldy + r];
			same &= memcmp(&acc, &got, 4) == 0;
			if (mag > 0)
				worst = fmax(worst, fabs(sum - got) / mag);
		}
	CHECK(same, "scalar %d %dx%d: not the order's bits", w->type, rows, cols);
	CHECK(worst < 1e-5, "scalar %d %dx%d: %g from the float64 sum", w->type, rows, cols, worst);
	check_levels(w, a, TMAX, yr, ldy, 32);
	free(row), free(a), free(yr);
}

/* Q5_0 and Q5_1 (WT_Q50, WT_Q51): tiles made with qtile_q5_put from
 * codes u and halves d, m drawn here (extremes: every u 0 in the first
 * rows, 31 in the others, activations +-127), their values d * (u - 16)
 * or fl(d * u) + m; check_order. */
static void check_q5(enum wtype t, int rows, int cols, int extremes)
{
	int nb = cols / 32;
	size_t n = (size_t)rows * cols;
	uint8_t *u = malloc(n);
	int *q = malloc(sizeof(int) * n);
	uint16_t *d = malloc(sizeof(uint16_t) * (size_t)rows * nb), *mn = malloc(sizeof(uint16_t) * (size_t)rows * nb);
	float *ws = malloc(sizeof(float) * (size_t)rows * nb), *wm = malloc(sizeof(float) * (size_t)rows * nb);
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			u[(size_t)r * cols + c] = extremes ? (r < rows / 2 ? 0 : 31)
							   : (uint8_t)((frand() + 1) * 16) & 31;
	for (int i = 0; i < rows * nb; i++) {
		d[i] = f32_to_f16((frand() + 1.5f) * 0.01f);
		mn[i] = f32_to_f16(frand() * 0.2f);
		ws[i] = f16_to_f32(d[i]);
		wm[i] = f16_to_f32(mn[i]);
	}
	struct wmat w = { .type = t, .rows = rows, .cols = cols, .tiled = QT_F16 + 1 };
	size_t bytes = qtile_bytes(t, rows, cols, QT_F16);
	void *tiles = aligned_alloc(64, bytes);
	memset(tiles, 0, bytes);
	w.data = tiles;
	for (int r = 0; r < rows; r++)
		for (int b = 0; b < nb; b++)
			qtile_q5_put(&w, tiles, r, b, u + (size_t)r * cols + 32 * b, d[r * nb + b],
				     mn[r * nb + b]);
	float *v = malloc(sizeof(float) * n);
	for (size_t i = 0; i < n; i++) {
		int k = (int)(i / (size_t)cols) * nb + (int)(i % (size_t)cols) / 32;
		q[i] = t == WT_Q50 ? u[i] - 16 : u[i];
		float p = ws[k] * (float)q[i];
		v[i] = t == WT_Q50 ? p : p + wm[k];
	}
	check_order(&w, q, ws, t == WT_Q51 ? wm : NULL, v, extremes);
	free(u), free(q), free(d), free(mn), free(ws), free(wm), free(tiles), free(v);
}

/* WT_IQ4 (GGUF's IQ4_NL and IQ4_XS): tiles made with qtile_iq4_put from
 * indices u and scales drawn here, halves (QT_F16) or floats that are not
 * (QT_F32; extremes: every u 0, level -127, in the first rows, 15, level
 * 113, in the others, activations +-127: AVX2's 16-bit pair sums at their
 * largest), their values s * level[u] with the levels of ggml's
 * kvalues_iq4nl written here; check_order. */
static void check_iq4(enum qtile_scales sk, int rows, int cols, int extremes)
{
	static const int level[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
				       1, 13, 25, 38, 53, 69, 89, 113 };
	int nb = cols / 32;
	size_t n = (size_t)rows * cols;
	uint8_t *u = malloc(n);
	int *q = malloc(sizeof(int) * n);
	float *sc = malloc(sizeof(float) * (size_t)rows * nb), *v = malloc(sizeof(float) * n);
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			u[(size_t)r * cols + c] = extremes ? (r < rows / 2 ? 0 : 15)
							   : (uint8_t)((frand() + 1) * 8) & 15;
	for (int i = 0; i < rows * nb; i++) {
		float x = (frand() + 1.5f) * 0.01f;
		sc[i] = sk == QT_F16 ? f16_to_f32(f32_to_f16(x)) : x * 1.0000001f;
	}
	struct wmat w = { .type = WT_IQ4, .rows = rows, .cols = cols, .tiled = (int)sk + 1 };
	size_t bytes = qtile_bytes(WT_IQ4, rows, cols, sk);
	void *tiles = aligned_alloc(64, bytes);
	memset(tiles, 0, bytes);
	w.data = tiles;
	for (int r = 0; r < rows; r++)
		for (int b = 0; b < nb; b++)
			qtile_iq4_put(&w, tiles, r, b, u + (size_t)r * cols + 32 * b, sc[r * nb + b]);
	for (size_t i = 0; i < n; i++) {
		q[i] = level[u[i]];
		v[i] = sc[(i / (size_t)cols) * (size_t)nb + (i % (size_t)cols) / 32] * (float)q[i];
	}
	check_order(&w, q, sc, NULL, v, extremes);
	free(u), free(q), free(sc), free(tiles), free(v);
}

/* GGUF's kinds of tiles put block by block: Q5_0, Q5_1, IQ4 with float
 * scales (IQ4_XS), IQ4 with halves (IQ4_NL). */
static void check_gguf(int kind, int rows, int cols, int extremes)
{
	if (kind < 2)
		check_q5(kind ? WT_Q51 : WT_Q50, rows, cols, extremes);
	else
		check_iq4(kind == 2 ? QT_F32 : QT_F16, rows, cols, extremes);
}

int main(void)
{
	printf("qtile: %s%s\n", cpu_level_name(cpu_level_env(NULL)),
	       kern_has_vnni() && cpu_level_env(NULL) == CPU_AVX512 ? " + VNNI" : "");
	int cols[] = { 1, 17, 32, 33, 64, 96, 100, 128, 896 };  /* 96: three blocks, a group and a half */
	int rows[] = { 1, 5, 16, 17, 40 };
	for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
		for (size_t j = 0; j < sizeof rows / sizeof rows[0]; j++) {
			check_shape(WT_Q8, rows[j], cols[i], 0, 0);
			if (cols[i] % 32)
				continue;
			for (int h = 0; h < 2; h++) {
				check_shape(WT_Q8, rows[j], cols[i], 32, h);
				check_shape(WT_Q4, rows[j], cols[i], 32, h);
			}
		}
	check_shape(WT_Q4, 33, 128, 64, 0);  /* group 64: the same scale for two blocks */
	check_extremes();
	for (int k = 0; k < 4; k++) {
		for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
			for (size_t j = 0; j < sizeof rows / sizeof rows[0]; j++)
				if (cols[i] % 32 == 0)
					check_gguf(k, rows[j], cols[i], 0);
		check_gguf(k, 32, 64, 1);
	}
	return check_done("qtile");
}
