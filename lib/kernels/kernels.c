/* kernels: the scalar reference kernels and the table of every level's
 * kernels. See kernels.h for the canonical evaluation orders. */
#include "kernels/kernels.h"
#include "kernels/kquant.h"
#include "kernels/prefetch.h"
#include "kernels/qtile_isa.h"
#include "kernels/quant_isa.h"
#include "core/bf16.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

/* Defined in kernels_avx2.c and kernels_avx512.c: each level's
 * elementwise kernels (kernels_simd.h), the rest of its table filled by
 * kernels_for. */
extern const struct kernels *const kernels_avx2, *const kernels_avx512;

float kern_sum16(const float s[KDOT_LANES])
{
	float t[KDOT_LANES];
	memcpy(t, s, sizeof t);
	for (int w = KDOT_LANES / 2; w >= 1; w /= 2)
		for (int j = 0; j < w; j++)
			t[j] += t[j + w];
	return t[0];
}

/* The canonical dot, inlined into the products. */
static inline __attribute__((always_inline)) float dot_inline(const float *a, const float *b,
							      int n)
{
	float s[KDOT_LANES] = {0};
	for (int i = 0; i < n; i++)
		s[i % KDOT_LANES] = fmaf(a[i], b[i], s[i % KDOT_LANES]);
	return kern_sum16(s);
}

static void att_scores_scalar(float *s, int lds, const float *q, int nq, const float *k,
			      int ldk, int np, int n, float scale)
{
	for (int h = 0; h < nq; h++)
		for (int p = 0; p < np; p++)
			s[(size_t)h * (size_t)lds + (size_t)p] =
				dot_inline(q + (size_t)h * (size_t)n, k + (size_t)p * (size_t)ldk, n) *
				scale;
}

static void att_values_scalar(float *y, const float *s, int lds, int nq, const float *v,
			      int ldv, int np, int n)
{
	for (int h = 0; h < nq; h++)
		for (int p = 0; p < np; p++)
			for (int i = 0; i < n; i++) {
				float *yh = y + (size_t)h * (size_t)n;
				yh[i] = fmaf(s[(size_t)h * (size_t)lds + (size_t)p],
					     v[(size_t)p * (size_t)ldv + (size_t)i], yh[i]);
			}
}

/* dot of 16-bit weights a, each widened exactly by `widen`. */
static inline __attribute__((always_inline)) float
dot_h16_scalar(const uint16_t *a, const float *b, int n, float (*widen)(uint16_t))
{
	float s[KDOT_LANES] = {0};
	for (int i = 0; i < n; i++)
		s[i % KDOT_LANES] = fmaf(widen(a[i]), b[i], s[i % KDOT_LANES]);
	return kern_sum16(s);
}

/* Row r of w, of es-byte elements, row-major: where the rows are
 * interleaved (weights.h), the reference kernels gather each row into out
 * first. */
static const void *row_of(const struct wmat *w, size_t es, int r, void *out)
{
	if (!w->il)
		return (const char *)w->data + es * wmat_row_at(r, w->cols, 0);
	for (int c = 0; c < w->cols; c++)
		memcpy((char *)out + es * (size_t)c, (const char *)w->data + es * wmat_at(w, r, c),
		       es);
	return out;
}

/* Each row of m's matrix (gathered first where interleaved) against each
 * input: a float32 row (es 4) by dot, a 16-bit one (es 2) widened by
 * `widen`. */
static inline __attribute__((always_inline)) void
rows_scalar(const struct kern_mm *m, const size_t es, float (*widen)(uint16_t))
{
	const struct wmat *w = m->w;
	int cols = w->cols;
	float buf[w->il ? cols : 1];  /* room for a row of either size */
	for (int r = m->r0; r < m->r1; r++) {
		const void *row = row_of(w, es, r, buf);
		for (int t = 0; t < m->T; t++)
			m->y[(size_t)t * m->ldy + r] =
				es == 4 ? dot_inline(row, m->x + (size_t)t * m->ldx, cols)
				: dot_h16_scalar(row, m->x + (size_t)t * m->ldx, cols, widen);
	}
}

void kern_mm_f32_scalar(const struct kern_mm *m)
{
	rows_scalar(m, 4, NULL);
}

void kern_mm_bf16_scalar(const struct kern_mm *m)
{
	rows_scalar(m, 2, bf16_to_f32);
}

void kern_mm_f16_scalar(const struct kern_mm *m)
{
	rows_scalar(m, 2, f16_to_f32);
}

static void rmsnorm_scalar(float *out, const float *x, const float *w, int n, float eps)
{
	float r = 1.0f / sqrtf(dot_inline(x, x, n) / (float)n + eps);
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

static const struct kernels kernels_scalar = {
	.att_group = ATT_MAXQ,
	.att_scores = att_scores_scalar,
	.att_values = att_values_scalar,
	.rmsnorm = rmsnorm_scalar,
	.softmax = softmax_scalar,
	.rope = rope_scalar,
	.silu_mul = silu_mul_scalar,
};

int kern_has_dpbf16(void)
{
	return cpu_detect() == CPU_AVX512 && __builtin_cpu_supports("avx512bf16");
}

int kern_has_vnni(void)
{
	return cpu_detect() == CPU_AVX512 && __builtin_cpu_supports("avx512vnni");
}

static struct kernels tables[CPU_AVX512 + 1];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

/* The products by weight type, as ggml-cpu's type traits: float
 * activations by level; int8 activations by the ISA that runs them
 * (scalar, AVX2, AVX-512 VNNI); bf16 activations without and with
 * vdpbf16ps. */
enum { ISA_SCALAR, ISA_AVX2, ISA_VNNI };
static kern_mm_fn *const mm_f32act[WT_COUNT][CPU_AVX512 + 1] = {
	[WT_F32] = { kern_mm_f32_scalar, kern_mm_f32_avx2, kern_mm_f32_avx512 },
	[WT_BF16] = { kern_mm_bf16_scalar, kern_mm_bf16_avx2, kern_mm_bf16_avx512 },
	[WT_F16] = { kern_mm_f16_scalar, kern_mm_f16_avx2, kern_mm_f16_avx512 },
	[WT_Q8] = { q8_mm_scalar, q8_mm_avx2, q8_mm_avx512 },
	[WT_Q4] = { q4_mm_scalar, q4_mm_avx2, q4_mm_avx512 },
	[WT_Q4K] = { kq_mm_scalar, kq_mm_avx2, kq_mm_avx512 },
	[WT_Q5K] = { kq_mm_scalar, kq_mm_avx2, kq_mm_avx512 },
	[WT_Q6K] = { kq_mm_scalar, kq_mm_avx2, kq_mm_avx512 },
	[WT_Q50] = { kq_mm_scalar, kq_mm_avx2, kq_mm_avx512 },
	[WT_Q51] = { kq_mm_scalar, kq_mm_avx2, kq_mm_avx512 },
	[WT_IQ4] = { kq_mm_scalar, kq_mm_avx2, kq_mm_avx512 },
};
static kern_mm_fn *const mm_q8act[WT_COUNT][ISA_VNNI + 1] = {
	[WT_Q8] = { qtile_mm_scalar, qtile_mm_avx2, qtile_mm_vnni },
	[WT_Q4] = { qtile_mm_scalar, qtile_mm_avx2, qtile_mm_vnni },
	[WT_Q50] = { qtile_mm_scalar, qtile_mm_avx2, qtile_mm_vnni },
	[WT_Q51] = { qtile_mm_scalar, qtile_mm_avx2, qtile_mm_vnni },
	[WT_IQ4] = { qtile_mm_scalar, qtile_mm_avx2, qtile_mm_vnni },
	[WT_Q4K] = { kq_q8a_scalar, kq_q8a_avx2, kq_q8a_vnni },
	[WT_Q5K] = { kq_q8a_scalar, kq_q8a_avx2, kq_q8a_vnni },
	[WT_Q6K] = { kq_q8a_scalar, kq_q8a_avx2, kq_q8a_vnni },
};

/* The streams' prefetch tuning for this processor (prefetch.h), then each
 * level's table: its elementwise kernels, then the products of the
 * level (int8 activations on AVX-512 need VNNI, else they take AVX2's;
 * vdpbf16ps where the CPU has it). */
static void fill_tables(void)
{
	prefetch_tune();
	const struct kernels *const base[] = {
		[CPU_SCALAR] = &kernels_scalar, [CPU_AVX2] = kernels_avx2,
		[CPU_AVX512] = kernels_avx512 };
	for (int l = CPU_SCALAR; l <= (int)cpu_detect(); l++) {
		struct kernels *k = &tables[l];
		*k = *base[l];
		k->level = (enum cpu_level)l;
		int isa = l == CPU_AVX512 && kern_has_vnni() ? ISA_VNNI
			  : l >= CPU_AVX2 ? ISA_AVX2 : ISA_SCALAR;
		for (int t = 0; t < WT_COUNT; t++) {
			k->mm[t][KA_F32] = mm_f32act[t][l];
			k->mm[t][KA_Q8] = mm_q8act[t][isa];
		}
		k->mm[WT_BF16][KA_B16] = l == CPU_AVX512 && kern_has_dpbf16() ? kern_mm_b16_dpbf16
									       : kern_mm_b16_ref;
		k->q8a_quantize = l == CPU_AVX512 ? q8a_quantize_avx512 : q8a_quantize_scalar;
	}
}

const struct kernels *kernels_for(enum cpu_level level)
{
	assert(level <= cpu_detect());
	pthread_once(&tables_once, fill_tables);
	return &tables[level];
}

void kern_row_float(const struct wmat *w, int r, float *out)
{
	switch (w->type) {
	case WT_F32: {
		const float *p = row_of(w, sizeof(float), r, out);
		if (p != out)
			memcpy(out, p, sizeof(float) * (size_t)w->cols);
		return;
	}
	case WT_BF16:
	case WT_F16: {
		uint16_t buf[w->il ? w->cols : 1];
		const uint16_t *p = row_of(w, sizeof *p, r, buf);
		for (int i = 0; i < w->cols; i++)
			out[i] = w->type == WT_BF16 ? bf16_to_f32(p[i]) : f16_to_f32(p[i]);
		return;
	}
	default:
		break;
	}
	abort();
}
