/* quant_avx2: the int8 and int4 matmul kernels for AVX2 + FMA.
 *
 * The same structure as quant_avx512.c with 8 lanes: four rows share each
 * load of x, one accumulator per row, prefetch QUANT_PREFETCH bytes ahead;
 * the last cols % 8 int8 columns are done in scalar code. */
#include "quant_isa.h"

#include <immintrin.h>

static inline float hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static inline __m256 widen8(__m128i b)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

static inline __m256 load8(const int8_t *p)
{
	return widen8(_mm_loadl_epi64((const __m128i *)p));
}

static float tail_dot(const int8_t *q, const float *x, int c0, int n)
{
	float acc = 0;
	for (int c = c0; c < n; c++)
		acc += (float)q[c] * x[c];
	return acc;
}

void q8_matmul_avx2(const struct wmat *w, float *ys, int ldy, int r0, int r1,
		      const float *xs, int ldx, int T)
{
	int n = w->cols, nv = n & ~7;
	const int8_t *base = w->data;
	int r = r0;
	for (; r + 4 <= r1; r += 4) {
		const int8_t *q0 = base + (size_t)r * n, *q1 = q0 + n, *q2 = q1 + n,
			     *q3 = q2 + n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			for (int c = 0; c < nv; c += 8) {
				if ((c & 63) == 0) {
					_mm_prefetch((const char *)q0 + c + QUANT_PREFETCH, _MM_HINT_T0);
					_mm_prefetch((const char *)q1 + c + QUANT_PREFETCH, _MM_HINT_T0);
					_mm_prefetch((const char *)q2 + c + QUANT_PREFETCH, _MM_HINT_T0);
					_mm_prefetch((const char *)q3 + c + QUANT_PREFETCH, _MM_HINT_T0);
				}
				__m256 xv = _mm256_loadu_ps(x + c);
				a0 = _mm256_fmadd_ps(load8(q0 + c), xv, a0);
				a1 = _mm256_fmadd_ps(load8(q1 + c), xv, a1);
				a2 = _mm256_fmadd_ps(load8(q2 + c), xv, a2);
				a3 = _mm256_fmadd_ps(load8(q3 + c), xv, a3);
			}
			y[r] = (hsum(a0) + tail_dot(q0, x, nv, n)) * w->scales[r];
			y[r + 1] = (hsum(a1) + tail_dot(q1, x, nv, n)) * w->scales[r + 1];
			y[r + 2] = (hsum(a2) + tail_dot(q2, x, nv, n)) * w->scales[r + 2];
			y[r + 3] = (hsum(a3) + tail_dot(q3, x, nv, n)) * w->scales[r + 3];
		}
	}
	for (; r < r1; r++) {
		const int8_t *q0 = base + (size_t)r * n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			__m256 a0 = _mm256_setzero_ps();
			for (int c = 0; c < nv; c += 8)
				a0 = _mm256_fmadd_ps(load8(q0 + c), _mm256_loadu_ps(x + c), a0);
			y[r] = (hsum(a0) + tail_dot(q0, x, nv, n)) * w->scales[r];
		}
	}
}

/* One int4 block (16 bytes, 32 weights) times x[0..32) added to acc. */
static inline __m256 q4_block(const uint8_t *p, const float *x, __m256 acc)
{
	const __m128i mask = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
	__m128i b = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_sub_epi8(_mm_and_si128(b, mask), eight);
	__m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(b, 4), mask), eight);
	acc = _mm256_fmadd_ps(widen8(lo), _mm256_loadu_ps(x), acc);
	acc = _mm256_fmadd_ps(widen8(_mm_srli_si128(lo, 8)), _mm256_loadu_ps(x + 8), acc);
	acc = _mm256_fmadd_ps(widen8(hi), _mm256_loadu_ps(x + 16), acc);
	return _mm256_fmadd_ps(widen8(_mm_srli_si128(hi, 8)), _mm256_loadu_ps(x + 24), acc);
}

void q4_matmul_avx2(const struct wmat *w, float *ys, int ldy, int r0, int r1,
		      const float *xs, int ldx, int T)
{
	int n = w->cols, G = w->group_size, ng = n / G;
	size_t rb = (size_t)n / 2;
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
			__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
			for (int g = 0; g < ng; g++) {
				__m256 g0 = _mm256_setzero_ps(), g1 = g0, g2 = g0, g3 = g0;
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
				a0 = _mm256_fmadd_ps(g0, _mm256_set1_ps(s0[g]), a0);
				a1 = _mm256_fmadd_ps(g1, _mm256_set1_ps(s1[g]), a1);
				a2 = _mm256_fmadd_ps(g2, _mm256_set1_ps(s2[g]), a2);
				a3 = _mm256_fmadd_ps(g3, _mm256_set1_ps(s3[g]), a3);
			}
			y[r] = hsum(a0);
			y[r + 1] = hsum(a1);
			y[r + 2] = hsum(a2);
			y[r + 3] = hsum(a3);
		}
	}
	for (; r < r1; r++) {
		const uint8_t *q0 = base + (size_t)r * rb;
		const float *s0 = w->scales + (size_t)r * ng;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			__m256 a0 = _mm256_setzero_ps();
			for (int g = 0; g < ng; g++) {
				__m256 g0 = _mm256_setzero_ps();
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK)
					g0 = q4_block(q0 + c / 2, x + c, g0);
				a0 = _mm256_fmadd_ps(g0, _mm256_set1_ps(s0[g]), a0);
			}
			y[r] = hsum(a0);
		}
	}
}
