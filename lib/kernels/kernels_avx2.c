/* kernels_avx2: AVX2 + FMA versions of the kernels in kernels.h, in exactly
 * the canonical order written there: the 16 partial sums of a dot product
 * live in two 8-lane registers (lanes 0-7 and 8-15), the tail (< 16
 * elements) of a matrix product is finished in scalar fmaf on the stored
 * lanes, then the fold of kern_sum16. The matrix products are here; the
 * other kernels are kernels_simd.h's, on the lane primitives below.
 * Called only when cpu_detect() says CPU_AVX2 or better. */
#include "kernels/kernels.h"
#include "kernels/hsum.h"
#include "kernels/prefetch.h"
#include "core/bf16.h"

#include <immintrin.h>

#define AI static inline __attribute__((always_inline))

AI __m256 ld_f32(const float *p)
{
	return _mm256_loadu_ps(p);
}

AI __m256 ld_bf16(const uint16_t *p)
{
	__m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

AI __m256 ld_f16(const uint16_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

AI float wf32(float v)
{
	return v;
}

/* Stores the two halves as the 16 partial sums. */
AI void spill(float s[KDOT_LANES], __m256 lo, __m256 hi)
{
	_mm256_storeu_ps(s, lo);
	_mm256_storeu_ps(s + 8, hi);
}

/* RB rows of w times one input: 2 * RB accumulators. il: interleaved rows
 * (weights.h); then there is no tail. */
#define MATMUL_BLOCK(NAME, WT, LD, WIDEN)                                     \
AI void NAME(float *y, int ldy, const WT *w, int cols, int r,                 \
	     const float *x, int ldx, int t, const int RB, int il)            \
{                                                                             \
	__m256 lo[4], hi[4];                                                  \
	const WT *wr[4];                                                      \
	const float *xr = x + (size_t)t * ldx;                                \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {                \
		lo[i] = hi[i] = _mm256_setzero_ps();                          \
		wr[i] = w + wmat_row_at(r + i, cols, il);                     \
	}                                                                     \
	size_t ahead = prefetch_ahead(sizeof(WT) * (size_t)RB * (size_t)cols); \
	int k = 0;                                                            \
	for (; k + 16 <= cols; k += 16) {                                     \
		size_t o = il ? wmat_il_col(k) : (size_t)k;                   \
		if (!il && (k * sizeof(WT)) % 64 == 0)                        \
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) \
				prefetch_at(wr[i] + o, ahead);                \
		__m256 xl = _mm256_loadu_ps(xr + k), xh = _mm256_loadu_ps(xr + k + 8); \
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {        \
			lo[i] = _mm256_fmadd_ps(LD(wr[i] + o), xl, lo[i]);    \
			hi[i] = _mm256_fmadd_ps(LD(wr[i] + o + 8), xh, hi[i]); \
		}                                                             \
	}                                                                     \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {                \
		float s[KDOT_LANES];                                          \
		spill(s, lo[i], hi[i]);                                       \
		for (int kk = k; kk < cols; kk++)                             \
			s[kk - k] = fmaf(WIDEN(wr[i][kk]), xr[kk], s[kk - k]); \
		y[(size_t)t * ldy + r + i] = kern_sum16(s);                   \
	}                                                                     \
}

/* Rows in blocks of 4, every input against a block while it is in cache;
 * interleaved rows in whole blocks from a multiple of 4. */
#define MATMUL(NAME, BLOCK, WT)                                               \
static void NAME(float *y, int ldy, const WT *w, int cols, int il, int r0,    \
		 int r1, const float *x, int ldx, int T)                      \
{                                                                             \
	int r = r0;                                                           \
	for (; il && r < r1 && r % 4; r++)                                    \
		for (int t = 0; t < T; t++)                                   \
			BLOCK(y, ldy, w, cols, r, x, ldx, t, 1, il);          \
	for (; r + 4 <= r1; r += 4)                                           \
		for (int t = 0; t < T; t++)                                   \
			BLOCK(y, ldy, w, cols, r, x, ldx, t, 4, il);          \
	for (; r < r1; r++)                                                   \
		for (int t = 0; t < T; t++)                                   \
			BLOCK(y, ldy, w, cols, r, x, ldx, t, 1, il);          \
}

MATMUL_BLOCK(block_f32, float, ld_f32, wf32)
MATMUL_BLOCK(block_bf16, uint16_t, ld_bf16, bf16_to_f32)
MATMUL(matmul_f32, block_f32, float)
MATMUL_BLOCK(block_f16, uint16_t, ld_f16, f16_to_f32)
MATMUL(matmul_bf16, block_bf16, uint16_t)
MATMUL(matmul_f16, block_f16, uint16_t)

/* The lane primitives of kernels_simd.h: lanes 0-7 in lo, 8-15 in hi;
 * tails through lane masks made by comparing the lane indices with n. */
typedef struct { __m256 lo, hi; } V;

AI V v_pair(__m256 lo, __m256 hi) { return (V){ lo, hi }; }
AI V v_zero(void) { return v_pair(_mm256_setzero_ps(), _mm256_setzero_ps()); }
AI V v_set1(float f) { return v_pair(_mm256_set1_ps(f), _mm256_set1_ps(f)); }
AI V v_load(const float *p) { return v_pair(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)); }
AI void v_store(float *p, V v)
{
	_mm256_storeu_ps(p, v.lo);
	_mm256_storeu_ps(p + 8, v.hi);
}

/* All ones in the lanes below n, of lanes base .. base + 7. */
AI __m256i lanes_below(int n, int base)
{
	__m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - base), idx);
}
AI V v_loadn(const float *p, int n)
{
	return v_pair(_mm256_maskload_ps(p, lanes_below(n, 0)),
		      _mm256_maskload_ps(p + 8, lanes_below(n, 8)));
}
AI void v_storen(float *p, V v, int n)
{
	_mm256_maskstore_ps(p, lanes_below(n, 0), v.lo);
	_mm256_maskstore_ps(p + 8, lanes_below(n, 8), v.hi);
}
AI V v_keep(V old, V new, int n)
{
	return v_pair(_mm256_blendv_ps(old.lo, new.lo, _mm256_castsi256_ps(lanes_below(n, 0))),
		      _mm256_blendv_ps(old.hi, new.hi, _mm256_castsi256_ps(lanes_below(n, 8))));
}

#define V2(name, op) \
	AI V name(V a, V b) { return v_pair(op(a.lo, b.lo), op(a.hi, b.hi)); }
V2(v_add, _mm256_add_ps)
V2(v_sub, _mm256_sub_ps)
V2(v_mul, _mm256_mul_ps)
V2(v_div, _mm256_div_ps)
V2(v_min, _mm256_min_ps)
V2(v_max, _mm256_max_ps)
#undef V2
AI V v_fma(V a, V b, V c)
{
	return v_pair(_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi));
}
AI V v_neg(V a)
{
	__m256 sign = _mm256_set1_ps(-0.0f);
	return v_pair(_mm256_xor_ps(a.lo, sign), _mm256_xor_ps(a.hi, sign));
}
AI __m256 rint8(__m256 a)
{
	return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
AI V v_rint(V a) { return v_pair(rint8(a.lo), rint8(a.hi)); }
AI __m256 pow2i8(__m256 n)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(
		_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
AI V v_pow2i(V n) { return v_pair(pow2i8(n.lo), pow2i8(n.hi)); }
AI float v_fold(V v) { return hsum_256x2(v.lo, v.hi); }
AI float v_hmax(V v)
{
	__m256 m = _mm256_max_ps(v.lo, v.hi);
	__m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

#include "kernels/kernels_simd.h"

const struct kernels kernels_avx2 = {
	.level = CPU_AVX2,
	.matmul_f32 = matmul_f32,
	.matmul_bf16 = matmul_bf16,
	.matmul_f16 = matmul_f16,
	.matmul_b16 = kern_matmul_b16_ref,
	.dot = dot,
	.rmsnorm = rmsnorm,
	.softmax = softmax,
	.rope = rope,
	.silu_mul = silu_mul,
	.axpy = axpy,
};
