/* quant_avx512: the int8 and int4 matmul kernels for AVX-512 (F, BW, VL).
 *
 * Four rows at a time share each load of x; each row has its own
 * accumulator, so four independent FMA chains hide the FMA latency while the
 * int8 -> int32 widening (one port-5 shuffle per 16 weights) sets the pace.
 * Each row's stream is prefetched QUANT_PREFETCH bytes ahead. */
#include "quant_isa.h"

#include <immintrin.h>

static inline __m512 widen8(__m128i b)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

static inline __m512 load8(const int8_t *p)
{
	return widen8(_mm_loadu_si128((const __m128i *)p));
}

static inline __m512 load8_tail(const int8_t *p, __mmask16 m)
{
	return widen8(_mm_maskz_loadu_epi8(m, p));
}

void q8_matmul_avx512(const struct wmat *w, float *ys, int ldy, int r0, int r1,
		      const float *xs, int ldx, int T)
{
	int n = w->cols, nv = n & ~15;
	__mmask16 tail = (__mmask16)((1u << (n & 15)) - 1);
	const int8_t *base = w->data;
	int r = r0;
	for (; r + 4 <= r1; r += 4) {
		const int8_t *q0 = base + (size_t)r * n, *q1 = q0 + n, *q2 = q1 + n,
			     *q3 = q2 + n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			for (int c = 0; c < nv; c += 16) {
				if ((c & 63) == 0) {
					_mm_prefetch((const char *)q0 + c + QUANT_PREFETCH, _MM_HINT_T0);
					_mm_prefetch((const char *)q1 + c + QUANT_PREFETCH, _MM_HINT_T0);
					_mm_prefetch((const char *)q2 + c + QUANT_PREFETCH, _MM_HINT_T0);
					_mm_prefetch((const char *)q3 + c + QUANT_PREFETCH, _MM_HINT_T0);
				}
				__m512 xv = _mm512_loadu_ps(x + c);
				a0 = _mm512_fmadd_ps(load8(q0 + c), xv, a0);
				a1 = _mm512_fmadd_ps(load8(q1 + c), xv, a1);
				a2 = _mm512_fmadd_ps(load8(q2 + c), xv, a2);
				a3 = _mm512_fmadd_ps(load8(q3 + c), xv, a3);
			}
			if (tail) {
				__m512 xv = _mm512_maskz_loadu_ps(tail, x + nv);
				a0 = _mm512_fmadd_ps(load8_tail(q0 + nv, tail), xv, a0);
				a1 = _mm512_fmadd_ps(load8_tail(q1 + nv, tail), xv, a1);
				a2 = _mm512_fmadd_ps(load8_tail(q2 + nv, tail), xv, a2);
				a3 = _mm512_fmadd_ps(load8_tail(q3 + nv, tail), xv, a3);
			}
			y[r] = _mm512_reduce_add_ps(a0) * w->scales[r];
			y[r + 1] = _mm512_reduce_add_ps(a1) * w->scales[r + 1];
			y[r + 2] = _mm512_reduce_add_ps(a2) * w->scales[r + 2];
			y[r + 3] = _mm512_reduce_add_ps(a3) * w->scales[r + 3];
		}
	}
	for (; r < r1; r++) {
		const int8_t *q0 = base + (size_t)r * n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			__m512 a0 = _mm512_setzero_ps();
			for (int c = 0; c < nv; c += 16)
				a0 = _mm512_fmadd_ps(load8(q0 + c), _mm512_loadu_ps(x + c), a0);
			if (tail)
				a0 = _mm512_fmadd_ps(load8_tail(q0 + nv, tail),
						     _mm512_maskz_loadu_ps(tail, x + nv), a0);
			y[r] = _mm512_reduce_add_ps(a0) * w->scales[r];
		}
	}
}

/* One int4 block (16 bytes, 32 weights) times x[0..32) added to acc. */
static inline __m512 q4_block(const uint8_t *p, const float *x, __m512 acc)
{
	const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
	__m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
	acc = _mm512_fmadd_ps(widen8(lo), _mm512_loadu_ps(x), acc);
	return _mm512_fmadd_ps(widen8(hi), _mm512_loadu_ps(x + 16), acc);
}

void q4_matmul_avx512(const struct wmat *w, float *ys, int ldy, int r0, int r1,
		      const float *xs, int ldx, int T)
{
	int n = w->cols, G = w->group_size, ng = n / G;
	size_t rb = (size_t)n / 2;  /* bytes per row */
	const uint8_t *base = w->data;
	int r = r0;
	for (; r + 4 <= r1; r += 4) {
		const uint8_t *q0 = base + (size_t)r * rb, *q1 = q0 + rb, *q2 = q1 + rb,
			      *q3 = q2 + rb;
		const float *s0 = w->scales + (size_t)r * ng, *s1 = s0 + ng,
			    *s2 = s1 + ng, *s3 = s2 + ng;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			for (int g = 0; g < ng; g++) {
				__m512 g0 = _mm512_setzero_ps(), g1 = g0, g2 = g0, g3 = g0;
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK) {
					size_t o = (size_t)c / 2;
					if ((o & 63) == 0) {
						_mm_prefetch((const char *)q0 + o + QUANT_PREFETCH, _MM_HINT_T0);
						_mm_prefetch((const char *)q1 + o + QUANT_PREFETCH, _MM_HINT_T0);
						_mm_prefetch((const char *)q2 + o + QUANT_PREFETCH, _MM_HINT_T0);
						_mm_prefetch((const char *)q3 + o + QUANT_PREFETCH, _MM_HINT_T0);
					}
					g0 = q4_block(q0 + o, x + c, g0);
					g1 = q4_block(q1 + o, x + c, g1);
					g2 = q4_block(q2 + o, x + c, g2);
					g3 = q4_block(q3 + o, x + c, g3);
				}
				a0 = _mm512_fmadd_ps(g0, _mm512_set1_ps(s0[g]), a0);
				a1 = _mm512_fmadd_ps(g1, _mm512_set1_ps(s1[g]), a1);
				a2 = _mm512_fmadd_ps(g2, _mm512_set1_ps(s2[g]), a2);
				a3 = _mm512_fmadd_ps(g3, _mm512_set1_ps(s3[g]), a3);
			}
			y[r] = _mm512_reduce_add_ps(a0);
			y[r + 1] = _mm512_reduce_add_ps(a1);
			y[r + 2] = _mm512_reduce_add_ps(a2);
			y[r + 3] = _mm512_reduce_add_ps(a3);
		}
	}
	for (; r < r1; r++) {
		const uint8_t *q0 = base + (size_t)r * rb;
		const float *s0 = w->scales + (size_t)r * ng;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			__m512 a0 = _mm512_setzero_ps();
			for (int g = 0; g < ng; g++) {
				__m512 g0 = _mm512_setzero_ps();
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK)
					g0 = q4_block(q0 + c / 2, x + c, g0);
				a0 = _mm512_fmadd_ps(g0, _mm512_set1_ps(s0[g]), a0);
			}
			y[r] = _mm512_reduce_add_ps(a0);
		}
	}
}
