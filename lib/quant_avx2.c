/* quant_avx2: the int8 and int4 matmul kernels for AVX2 + FMA: the steps
 * for lib/quant_simd.h, the 16 canonical lanes in two ymm (lanes 0-7 in
 * lo, 8-15 in hi). */
#include "quant_isa.h"

#include <immintrin.h>
#include <string.h>

typedef struct { __m256 lo, hi; } A;
#define QUANT_FN(name) name##_avx2

static inline A azero(void) { return (A){ _mm256_setzero_ps(), _mm256_setzero_ps() }; }

static inline __m256 widen8(__m128i b)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

static inline A q8_step(const int8_t *q, const float *x, A acc)
{
	__m128i b = _mm_loadu_si128((const __m128i *)q);
	acc.lo = _mm256_fmadd_ps(widen8(b), _mm256_loadu_ps(x), acc.lo);
	acc.hi = _mm256_fmadd_ps(widen8(_mm_srli_si128(b, 8)), _mm256_loadu_ps(x + 8), acc.hi);
	return acc;
}

static inline A q4_step(const uint8_t *p, const float *x, A acc)
{
	const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
	__m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
	acc.lo = _mm256_fmadd_ps(widen8(lo), _mm256_loadu_ps(x), acc.lo);
	acc.hi = _mm256_fmadd_ps(widen8(_mm_srli_si128(lo, 8)), _mm256_loadu_ps(x + 8), acc.hi);
	acc.lo = _mm256_fmadd_ps(widen8(hi), _mm256_loadu_ps(x + 16), acc.lo);
	acc.hi = _mm256_fmadd_ps(widen8(_mm_srli_si128(hi, 8)), _mm256_loadu_ps(x + 24), acc.hi);
	return acc;
}

static inline A ascale(A g, float s, A acc)
{
	__m256 v = _mm256_set1_ps(s);
	return (A){ _mm256_fmadd_ps(g.lo, v, acc.lo), _mm256_fmadd_ps(g.hi, v, acc.hi) };
}

/* s[j] + s[j + 8]: the canonical fold's first halving. */
static inline __m256 ahalf(A a)
{
	return _mm256_add_ps(a.lo, a.hi);
}

#include "quant_simd.h"
