/* quant_avx512: the int8 and int4 matmul kernels for AVX-512 (F, BW, VL):
 * the vector steps for lib/quant_simd.h, 16 lanes. The int8 widening is one
 * vpmovsxbd per 16 weights; the last n % 16 columns use masked loads. */
#include "quant_isa.h"

#include <immintrin.h>

#define VL 16
#define V __m512
#define QUANT_FN(name) name##_avx512

static inline V vzero(void) { return _mm512_setzero_ps(); }
static inline V vload(const float *x) { return _mm512_loadu_ps(x); }
static inline V vset1(float s) { return _mm512_set1_ps(s); }
static inline V vfma(V a, V b, V acc) { return _mm512_fmadd_ps(a, b, acc); }
static inline float vreduce(V a) { return _mm512_reduce_add_ps(a); }

static inline V widen8(__m128i b)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

static inline V q8_step(const int8_t *q, V xv, V acc)
{
	return vfma(widen8(_mm_loadu_si128((const __m128i *)q)), xv, acc);
}

static inline float q8_finish(V acc, const int8_t *q, const float *x, int nv, int n)
{
	if (n > nv) {
		__mmask16 m = (__mmask16)((1u << (n - nv)) - 1);
		acc = vfma(widen8(_mm_maskz_loadu_epi8(m, q + nv)),
			   _mm512_maskz_loadu_ps(m, x + nv), acc);
	}
	return vreduce(acc);
}

static inline V q4_block(const uint8_t *p, const float *x, V acc)
{
	const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
	__m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
	acc = vfma(widen8(lo), vload(x), acc);
	return vfma(widen8(hi), vload(x + 16), acc);
}

#include "quant_simd.h"
