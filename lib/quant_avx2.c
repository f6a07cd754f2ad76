/* quant_avx2: the int8 and int4 matmul kernels for AVX2 + FMA: the vector
 * steps for lib/quant_simd.h, 8 lanes. The last n % 8 int8 columns are
 * summed in scalar code after the reduction. */
#include "quant_isa.h"

#include <immintrin.h>

#define VL 8
#define V __m256
#define QUANT_FN(name) name##_avx2

static inline V vzero(void) { return _mm256_setzero_ps(); }
static inline V vload(const float *x) { return _mm256_loadu_ps(x); }
static inline V vset1(float s) { return _mm256_set1_ps(s); }
static inline V vfma(V a, V b, V acc) { return _mm256_fmadd_ps(a, b, acc); }

static inline float vreduce(V v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static inline V widen8(__m128i b)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

static inline V q8_step(const int8_t *q, V xv, V acc)
{
	return vfma(widen8(_mm_loadl_epi64((const __m128i *)q)), xv, acc);
}

static inline float q8_finish(V acc, const int8_t *q, const float *x, int nv, int n)
{
	float tail = 0;
	for (int c = nv; c < n; c++)
		tail += (float)q[c] * x[c];
	return vreduce(acc) + tail;
}

static inline V q4_block(const uint8_t *p, const float *x, V acc)
{
	const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
	__m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
	acc = vfma(widen8(lo), vload(x), acc);
	acc = vfma(widen8(_mm_srli_si128(lo, 8)), vload(x + 8), acc);
	acc = vfma(widen8(hi), vload(x + 16), acc);
	return vfma(widen8(_mm_srli_si128(hi, 8)), vload(x + 24), acc);
}

#include "quant_simd.h"
