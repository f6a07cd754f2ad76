/* kernels: the scalar reference kernels and the dispatch table. See
 * kernels.h for the canonical evaluation orders. */
#include "kernels/kernels.h"
#include "core/bf16.h"

#include <assert.h>
#include <float.h>
#include <stdlib.h>

/* Defined in kernels_avx2.c and kernels_avx512.c (_dpbf16: the same with
 * the vdpbf16ps bf16-activation product). */
extern const struct kernels kernels_avx2, kernels_avx512, kernels_avx512_dpbf16;

float kern_sum16(const float s[KDOT_LANES])
{
	float t[KDOT_LANES];
	memcpy(t, s, sizeof t);
	for (int w = KDOT_LANES / 2; w >= 1; w /= 2)
		for (int j = 0; j < w; j++)
			t[j] += t[j + w];
	return t[0];
}

static float dot_scalar(const float *a, const float *b, int n)
{
	float s[KDOT_LANES] = {0};
	for (int i = 0; i < n; i++)
		s[i % KDOT_LANES] = fmaf(a[i], b[i], s[i % KDOT_LANES]);
	return kern_sum16(s);
}

/* dot of 16-bit weights a, each widened exactly by `widen`. */
static inline float dot_h16_scalar(const uint16_t *a, const float *b, int n,
				   float (*widen)(uint16_t))
{
	float s[KDOT_LANES] = {0};
	for (int i = 0; i < n; i++)
		s[i % KDOT_LANES] = fmaf(widen(a[i]), b[i], s[i % KDOT_LANES]);
	return kern_sum16(s);
}

/* A subnormal as a zero of its sign: the DAZ and FTZ of vdpbf16ps. */
static float flush(float v)
{
	return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;
}

static float dot_b16_scalar(const uint16_t *w, const uint16_t *x, int n)
{
	float s[KDOT_LANES] = {0};
	for (int c = 0; c < n; c += 2 * KDOT_LANES)
		for (int j = 0; j < KDOT_LANES; j++)
			for (int i = c + 2 * j + 1; i >= c + 2 * j; i--) {
				float a = i < n ? bf16_to_f32(w[i]) : 0.0f;
				float b = i < n ? bf16_to_f32(x[i]) : 0.0f;
				s[j] = flush(fmaf(flush(a), flush(b), s[j]));
			}
	return kern_sum16(s);
}

/* Row r of a matrix of esize-byte elements into out[cols], row-major:
 * where the rows are interleaved (weights.h), the reference kernels gather
 * each row first. */
static const void *row_of(const void *w, size_t esize, int cols, int il, int r, void *out)
{
	const char *b = (const char *)w + esize * wmat_row_at(r, cols, il);
	if (!il)
		return b;
	for (int c = 0; c < cols; c += WMAT_IL_COLS)
		memcpy((char *)out + esize * (size_t)c, b + esize * wmat_il_col(c),
		       esize * WMAT_IL_COLS);
	return out;
}

static void matmul_f32_scalar(float *y, int ldy, const float *w, int cols, int il,
			      int r0, int r1, const float *x, int ldx, int T)
{
	float buf[il ? cols : 1];
	for (int r = r0; r < r1; r++) {
		const float *row = row_of(w, sizeof *w, cols, il, r, buf);
		for (int t = 0; t < T; t++)
			y[(size_t)t * ldy + r] = dot_scalar(row, x + (size_t)t * ldx, cols);
	}
}

static inline void matmul_h16_scalar(float *y, int ldy, const uint16_t *w, int cols,
				     int il, int r0, int r1, const float *x, int ldx, int T,
				     float (*widen)(uint16_t))
{
	uint16_t buf[il ? cols : 1];
	for (int r = r0; r < r1; r++) {
		const uint16_t *row = row_of(w, sizeof *w, cols, il, r, buf);
		for (int t = 0; t < T; t++)
			y[(size_t)t * ldy + r] = dot_h16_scalar(row, x + (size_t)t * ldx, cols,
								widen);
	}
}

static void matmul_bf16_scalar(float *y, int ldy, const uint16_t *w, int cols, int il,
			       int r0, int r1, const float *x, int ldx, int T)
{
	matmul_h16_scalar(y, ldy, w, cols, il, r0, r1, x, ldx, T, bf16_to_f32);
}

static void matmul_f16_scalar(float *y, int ldy, const uint16_t *w, int cols, int il,
			      int r0, int r1, const float *x, int ldx, int T)
{
	matmul_h16_scalar(y, ldy, w, cols, il, r0, r1, x, ldx, T, f16_to_f32);
}

void kern_matmul_b16_ref(float *y, int ldy, const uint16_t *w, int cols, int il,
			 int r0, int r1, const uint16_t *x, int ldx, int T)
{
	uint16_t buf[il ? cols : 1];
	for (int r = r0; r < r1; r++) {
		const uint16_t *row = row_of(w, sizeof *w, cols, il, r, buf);
		for (int t = 0; t < T; t++)
			y[(size_t)t * ldy + r] = dot_b16_scalar(row, x + (size_t)t * ldx, cols);
	}
}

static void rmsnorm_scalar(float *out, const float *x, const float *w, int n, float eps)
{
	float r = 1.0f / sqrtf(dot_scalar(x, x, n) / (float)n + eps);
	for (int i = 0; i < n; i++)
		out[i] = w[i] * (x[i] * r);
}

static void softmax_scalar(float *x, int n)
{
	float m = x[0];
	for (int i = 1; i < n; i++)
		m = x[i] > m ? x[i] : m;
	float s[KDOT_LANES] = {0};
	for (int i = 0; i < n; i++) {
		x[i] = kexp(x[i] - m);
		s[i % KDOT_LANES] += x[i];
	}
	float sum = kern_sum16(s);
	for (int i = 0; i < n; i++)
		x[i] = x[i] / sum;
}

static void rope_scalar(float *x, int n_heads, int head_dim, const float *cos,
			const float *sin)
{
	int half = head_dim / 2;
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		for (int i = 0; i < half; i++) {
			float a = v[i], b = v[i + half];
			float ac = a * cos[i], bs = b * sin[i];
			float bc = b * cos[i], as = a * sin[i];
			v[i] = ac - bs;
			v[i + half] = bc + as;
		}
	}
}

static void silu_mul_scalar(float *g, const float *u, int n)
{
	for (int i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + kexp(-g[i])) * u[i];
}

static void axpy_scalar(float *y, float a, const float *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] = fmaf(a, x[i], y[i]);
}

static const struct kernels kernels_scalar = {
	.level = CPU_SCALAR,
	.matmul_f32 = matmul_f32_scalar,
	.matmul_bf16 = matmul_bf16_scalar,
	.matmul_f16 = matmul_f16_scalar,
	.matmul_b16 = kern_matmul_b16_ref,
	.dot = dot_scalar,
	.rmsnorm = rmsnorm_scalar,
	.softmax = softmax_scalar,
	.rope = rope_scalar,
	.silu_mul = silu_mul_scalar,
	.axpy = axpy_scalar,
};

int kern_has_dpbf16(void)
{
	return cpu_detect() == CPU_AVX512 && __builtin_cpu_supports("avx512bf16");
}

const struct kernels *kernels_for(enum cpu_level level)
{
	assert(level <= cpu_detect());
	switch (level) {
	case CPU_AVX512:
		return kern_has_dpbf16() ? &kernels_avx512_dpbf16 : &kernels_avx512;
	case CPU_AVX2: return &kernels_avx2;
	default: return &kernels_scalar;
	}
}

void kern_row_float(const struct wmat *w, int r, float *out)
{
	switch (w->type) {
	case WT_F32: {
		const float *p = row_of(w->data, sizeof(float), w->cols, w->il, r, out);
		if (p != out)
			memcpy(out, p, sizeof(float) * (size_t)w->cols);
		return;
	}
	case WT_BF16:
	case WT_F16: {
		uint16_t buf[w->il ? w->cols : 1];
		const uint16_t *p = row_of(w->data, sizeof *p, w->cols, w->il, r, buf);
		for (int i = 0; i < w->cols; i++)
			out[i] = w->type == WT_BF16 ? bf16_to_f32(p[i]) : f16_to_f32(p[i]);
		return;
	}
	default:
		break;
	}
	abort();
}
