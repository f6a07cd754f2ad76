/* quant_avx2: the int8 and int4 matmul kernels for AVX2 + FMA: the steps
 * for lib/kernels/quant_simd.h, the 16 canonical lanes in two ymm (lanes 0-7 in
 * lo, 8-15 in hi). */
#include "kernels/quant_isa.h"
#include "kernels/hsum.h"

#include <immintrin.h>
#include <string.h>

typedef struct { __m256 lo, hi; } A;
#define QUANT_FN(name) name##_avx2

static inline A aload(const float *f) { return (A){ _mm256_loadu_ps(f), _mm256_loadu_ps(f + 8) }; }
static inline void astore(float *f, A v)
{
	_mm256_storeu_ps(f, v.lo);
	_mm256_storeu_ps(f + 8, v.hi);
}

static inline A azero(void) { return (A){ _mm256_setzero_ps(), _mm256_setzero_ps() }; }

static inline __attribute__((always_inline)) void apin(A *v)
{
	__asm__("" : "+v"(v->lo), "+v"(v->hi));
}

static inline __m256 widen8(__m128i b)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

static inline A q8_widen(const int8_t *q)
{
	__m128i b = _mm_loadu_si128((const __m128i *)q);
	return (A){ widen8(b), widen8(_mm_srli_si128(b, 8)) };
}

static inline A afma(A w, const float *x, A acc)
{
	return (A){ _mm256_fmadd_ps(w.lo, _mm256_loadu_ps(x), acc.lo),
		    _mm256_fmadd_ps(w.hi, _mm256_loadu_ps(x + 8), acc.hi) };
}

static inline A q8_step(const int8_t *q, const float *x, A acc)
{
	return afma(q8_widen(q), x, acc);
}

/* Tokens per pass over a block of four rows (quant_simd.h): int8 two, so
 * the 8 accumulators (16 ymm) leave room for the codes; int4 one. */
#define QUANT_TB 2
#define QUANT_TT4 1

static inline void q4_widen(const uint8_t *p, A *lo, A *hi)
{
	const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m128i l = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
	__m128i h = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
	*lo = (A){ widen8(l), widen8(_mm_srli_si128(l, 8)) };
	*hi = (A){ widen8(h), widen8(_mm_srli_si128(h, 8)) };
}

static inline A ascale(A g, float s, A acc)
{
	__m256 v = _mm256_set1_ps(s);
	return (A){ _mm256_fmadd_ps(g.lo, v, acc.lo), _mm256_fmadd_ps(g.hi, v, acc.hi) };
}

static inline float afold(A a)
{
	return hsum_256x2(a.lo, a.hi);
}

#include "kernels/quant_simd.h"
