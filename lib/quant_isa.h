/* quant_isa: the per-ISA kernels behind lib/quant.h (internal to lib/).
 *
 * Each function computes rows [r0, r1) of y_t = W x_t (t < T) for one
 * matrix type, with the arguments of quant_matmul; the
 * *_avx2 / *_avx512 / *_vnni files are compiled for that ISA only, and
 * quant.c calls them after checking CPUID.
 */
#ifndef QUANT_ISA_H
#define QUANT_ISA_H

#include "quant.h"

typedef void quant_matmul_fn(const struct wmat *w, float *y, int ldy, int r0,
			     int r1, const float *x, int ldx, int T);
typedef void quant_q8a_fn(const struct wmat *w, const struct q8act *a,
			  float *y, int r0, int r1);

quant_matmul_fn q8_matmul_scalar, q8_matmul_avx2, q8_matmul_avx512;
quant_matmul_fn q4_matmul_scalar, q4_matmul_avx2, q4_matmul_avx512;
quant_q8a_fn q8_matvec_q8a_scalar, q4_matvec_q8a_scalar;
quant_q8a_fn matvec_q8a_vnni;  /* both types */

#ifdef __AVX__
#include <immintrin.h>
/* The canonical fold's last three halvings (lanes j += j + 4, j + 2, j + 1)
 * of 8 partial sums that are already s[j] + s[j + 8]. */
static inline float quant_fold8(__m256 h)
{
	__m128 v = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	v = _mm_add_ps(v, _mm_movehl_ps(v, v));
	v = _mm_add_ss(v, _mm_movehdup_ps(v));
	return _mm_cvtss_f32(v);
}
/* The same for four rows at once (a, b, c, d each s[j] + s[j + 8] of its
 * row): every add is the one quant_fold8 does, in other lanes, so the
 * results are bitwise those of four quant_fold8 calls. */
static inline void quant_fold8x4(__m256 a, __m256 b, __m256 c, __m256 d, float out[4])
{
	/* j += j + 4: [a b] and [c d], four sums each */
	__m256 ab = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20),
				  _mm256_permute2f128_ps(a, b, 0x31));
	__m256 cd = _mm256_add_ps(_mm256_permute2f128_ps(c, d, 0x20),
				  _mm256_permute2f128_ps(c, d, 0x31));
	/* j += j + 2: per 128-bit lane [x0 x1 y0 y1] for (a, c) and (b, d) */
	__m256 w = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
				 _mm256_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
	/* j += j + 1: [a c a c | b d b d] */
	__m256 v = _mm256_add_ps(_mm256_shuffle_ps(w, w, _MM_SHUFFLE(2, 0, 2, 0)),
				 _mm256_shuffle_ps(w, w, _MM_SHUFFLE(3, 1, 3, 1)));
	__m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
	out[0] = _mm_cvtss_f32(lo);
	out[1] = _mm_cvtss_f32(hi);
	out[2] = _mm_cvtss_f32(_mm_movehdup_ps(lo));
	out[3] = _mm_cvtss_f32(_mm_movehdup_ps(hi));
}
#endif

/* How far ahead (bytes) the SIMD kernels prefetch each weight row: far
 * enough to cover DRAM latency at streaming speed. */
#define QUANT_PREFETCH 512

#endif
