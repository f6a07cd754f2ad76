/* hsum: the canonical fold of 16 partial sums (kern_sum16, kernels.h:
 * s[j] += s[j + w] for w = 8, 4, 2, 1; the result is s[0]) on vector
 * registers, one helper per width, shared by the SIMD kernels (internal to
 * lib/kernels). Each adds the same pairs of lanes as kern_sum16, in the
 * same order, so its result is bitwise kern_sum16's; hsum_512x8 folds
 * eight accumulators at once, the same additions.
 *
 * Include it from a file compiled for AVX2 (the 8-lane forms) or AVX-512
 * (both); elsewhere it declares nothing.
 */
#ifndef HSUM_H
#define HSUM_H

#ifdef __AVX__
#include <immintrin.h>

/* The last three halvings (w = 4, 2, 1) of 8 sums that are already
 * s[j] + s[j + 8]. */
static inline __attribute__((always_inline)) float hsum_fold8(__m256 h)
{
	__m128 v = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	v = _mm_add_ps(v, _mm_movehl_ps(v, v));
	v = _mm_add_ss(v, _mm_movehdup_ps(v));
	return _mm_cvtss_f32(v);
}

/* The 16 sums as two ymm: s[0..7] in lo, s[8..15] in hi. */
static inline __attribute__((always_inline)) float hsum_256x2(__m256 lo, __m256 hi)
{
	return hsum_fold8(_mm256_add_ps(lo, hi));
}
#endif

#ifdef __AVX512F__
/* The 16 sums in one zmm. */
static inline __attribute__((always_inline)) float hsum_512(__m512 v)
{
	return hsum_fold8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

/* The fold of kern_sum16 on each of a[0..7], done together: each step
 * adds the same pairs of lanes as hsum_512, for eight accumulators in a few
 * shuffles. Returns the eight sums in order. */
static inline __attribute__((always_inline)) __m256 hsum_512x8(const __m512 a[8])
{
	__m512 p[4], q[2];
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)  /* s[j] + s[j + 8]: [a.lo, b.lo] + [a.hi, b.hi] */
		p[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
				     _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
	_Pragma("GCC unroll 2") for (int i = 0; i < 2; i++)  /* + s[j + 4]: quarter i of q is accumulator i's */
		q[i] = _mm512_add_ps(_mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
				     _mm512_shuffle_f32x4(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
	/* + s[j + 2]: in quarter i, accumulator i's two sums, then i + 4's */
	__m512 u = _mm512_add_ps(_mm512_shuffle_ps(q[0], q[1], _MM_SHUFFLE(1, 0, 1, 0)),
				 _mm512_shuffle_ps(q[0], q[1], _MM_SHUFFLE(3, 2, 3, 2)));
	/* + s[j + 1]: element 0 of quarter i is accumulator i, element 1 is i + 4 */
	__m512 v = _mm512_add_ps(_mm512_shuffle_ps(u, u, _MM_SHUFFLE(2, 0, 2, 0)),
				 _mm512_shuffle_ps(u, u, _MM_SHUFFLE(3, 1, 3, 1)));
	const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);
	return _mm512_castps512_ps256(_mm512_permutexvar_ps(idx, v));
}
#endif

#endif
