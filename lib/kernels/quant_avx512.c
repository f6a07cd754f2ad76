/* quant_avx512: the int8 and int4 matmul kernels for AVX-512 (F, BW, VL):
 * the steps for lib/kernels/quant_simd.h, the 16 canonical lanes in one zmm. The
 * int8 widening is one vpmovsxbd per 16 weights. */
#include "kernels/quant_isa.h"
#include "kernels/hsum.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define A __m512
#define QUANT_FN(name) name##_avx512

static inline A aload(const float *f) { return _mm512_loadu_ps(f); }
static inline void astore(float *f, A v) { _mm512_storeu_ps(f, v); }

static inline A azero(void) { return _mm512_setzero_ps(); }

static inline __attribute__((always_inline)) void apin(A *v) { __asm__("" : "+v"(*v)); }

static inline A widen8(__m128i b)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

static inline A q8_widen(const int8_t *q)
{
	return widen8(_mm_loadu_si128((const __m128i *)q));
}

static inline A afma(A w, const float *x, A acc)
{
	return _mm512_fmadd_ps(w, _mm512_loadu_ps(x), acc);
}

static inline A q8_step(const int8_t *q, const float *x, A acc)
{
	return afma(q8_widen(q), x, acc);
}

/* Tokens per pass over a block of four rows (quant_simd.h): int8, 16
 * accumulators, four codes and one input; int4, 8 group sums, 8 row sums,
 * the 4 codes pinned in registers and the inputs. With three tokens (24
 * sums) the pinned codes did not fit and went to the stack. */
#define QUANT_TB 4
#define QUANT_TT4 2

/* The int4 block: the 16 bytes zero-extended to 16 dwords once; vpermps
 * reads only the low 4 bits of each index, so the dwords index a table of
 * the 16 codes' floats (-8 .. 7) directly for the low nibbles, and after
 * one shift for the high ones: two shuffles and a shift per 32 weights
 * instead of masking, subtracting and converting (measured:
 * docs/performance.md, the int4 kernel). float(q) is exact, so the order and the bits are
 * those of the reference. */
static inline void q4_widen(const uint8_t *p, A *lo, A *hi)
{
	const __m512 codes = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1,
					    0, 1, 2, 3, 4, 5, 6, 7);
	__m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
	*lo = _mm512_permutexvar_ps(b, codes);
	*hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), codes);
}

static inline A ascale(A g, float s, A acc)
{
	return _mm512_fmadd_ps(g, _mm512_set1_ps(s), acc);
}

static inline float afold(A a)
{
	return hsum_512(a);
}

#include "kernels/quant_simd.h"

/* ---- quantizing the activations ---- */

/* q8a_quantize_scalar's bits, a block of 32 at a time: the same float
 * division for the scale and for each x / scale, and roundf's half away
 * from zero as truncation plus one step away from zero where the (exact)
 * remainder is at least one half. */
void q8a_quantize_avx512(const float *x, int n, struct q8act *a)
{
	int np = q8a_padded(n);
	a->n = n;
	const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
	const __m512 lim = _mm512_set1_ps(127.0f);
	const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
	for (int b = 0; b < np; b += Q8A_BLOCK) {
		int left = n - b;
		__mmask16 m0 = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
		__mmask16 m1 = left >= 32 ? 0xffff : left <= 16 ? 0
			: (__mmask16)((1u << (left - 16)) - 1);
		__m512 v[2] = { _mm512_maskz_loadu_ps(m0, x + b),
				_mm512_maskz_loadu_ps(m1, x + b + 16) };
		__m512 amax = _mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1]));
		float s = _mm512_reduce_max_ps(amax) / 127.0f;
		int nan = (_mm512_cmp_ps_mask(v[0], v[0], _CMP_UNORD_Q) |
			   _mm512_cmp_ps_mask(v[1], v[1], _CMP_UNORD_Q)) != 0;
		a->scales[b / Q8A_BLOCK] = nan ? NAN : s;
		__m512 vs = _mm512_set1_ps(s);
		for (int h = 0; h < 2; h++) {
			__m128i q = _mm_setzero_si128();
			if (s != 0 && !nan) {
				__m512 d = _mm512_div_ps(v[h], vs);
				__m512 t = _mm512_roundscale_ps(d, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
				__m512 f = _mm512_abs_ps(_mm512_sub_ps(d, t));
				__mmask16 up = _mm512_cmp_ps_mask(f, half, _CMP_GE_OQ);
				__m512 step = _mm512_castsi512_ps(_mm512_or_si512(
					_mm512_castps_si512(one),
					_mm512_and_si512(_mm512_castps_si512(d), sign)));
				t = _mm512_mask_add_ps(t, up, t, step);
				t = _mm512_min_ps(_mm512_max_ps(t, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
				q = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(t));
			}
			_mm_storeu_si128((__m128i *)(a->q + b + 16 * h), q);
		}
	}
	q8a_sums(a);
}
