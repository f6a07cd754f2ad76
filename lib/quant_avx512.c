/* quant_avx512: the int8 and int4 matmul kernels for AVX-512 (F, BW, VL):
 * the steps for lib/quant_simd.h, the 16 canonical lanes in one zmm. The
 * int8 widening is one vpmovsxbd per 16 weights. */
#include "quant_isa.h"

#include <immintrin.h>
#include <string.h>

#define A __m512
#define QUANT_FN(name) name##_avx512

static inline A azero(void) { return _mm512_setzero_ps(); }

static inline A widen8(__m128i b)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

static inline A q8_step(const int8_t *q, const float *x, A acc)
{
	return _mm512_fmadd_ps(widen8(_mm_loadu_si128((const __m128i *)q)),
			       _mm512_loadu_ps(x), acc);
}

static inline A q4_step(const uint8_t *p, const float *x, A acc)
{
	const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
	__m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
	acc = _mm512_fmadd_ps(widen8(lo), _mm512_loadu_ps(x), acc);
	return _mm512_fmadd_ps(widen8(hi), _mm512_loadu_ps(x + 16), acc);
}

static inline A ascale(A g, float s, A acc)
{
	return _mm512_fmadd_ps(g, _mm512_set1_ps(s), acc);
}

/* s[j] + s[j + 8]: the canonical fold's first halving. */
static inline __m256 ahalf(A a)
{
	return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
}

#include "quant_simd.h"
