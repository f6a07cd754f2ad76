/* quant_vnni: the int8-activation kernels (AVX-512 VNNI, vpdpbusd).
 *
 * The activations were quantized in blocks of Q8A_BLOCK = 32 (lib/quant.h);
 * a 64-byte chunk of weights covers two blocks, whose integer sums land in
 * lanes 0-7 and 8-15 of the vpdpbusd result, so one float vector of the two
 * blocks' scales turns the chunk into floats. vpdpbusd multiplies unsigned by
 * signed bytes:
 *   int8 weights: |x| (unsigned) times the weight with x's sign moved onto
 *                 it, which gives exactly sum(w x);
 *   int4 weights: the stored nibble u = q + 8 (unsigned) times x, minus
 *                 8 * sum(x), which gives exactly sum(q x).
 * Up to four rows share each chunk's activation work; each row's weights are
 * prefetched ahead as lib/prefetch.h says. */
#include "quant_isa.h"
#include "prefetch.h"

#include <immintrin.h>

/* What a 64-column chunk of activations contributes, shared by the rows. */
struct chunk {
	__mmask64 m;     /* the columns that exist */
	__m512i xq;      /* the codes */
	__m512i ax;      /* |codes| */
	__mmask64 neg;   /* codes < 0 */
	__m512i xsum8;   /* 8 * (sum of each 4 codes), per int32 lane */
	__m512 xs;       /* block scales: lanes 0-7 first block, 8-15 second */
	int two;         /* whether the second block exists */
};

static inline void chunk_load(struct chunk *k, const struct q8act *a, int c, int n)
{
	int left = n - c;
	k->m = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
	k->xq = _mm512_maskz_loadu_epi8(k->m, a->q + c);
	k->ax = _mm512_abs_epi8(k->xq);
	k->neg = _mm512_movepi8_mask(k->xq);
	k->xsum8 = _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(),
							 _mm512_set1_epi8(1), k->xq), 3);
	k->two = left > Q8A_BLOCK;
	float s1 = k->two ? a->scales[c / Q8A_BLOCK + 1] : 0.0f;
	k->xs = _mm512_insertf32x8(_mm512_set1_ps(a->scales[c / Q8A_BLOCK]),
				   _mm256_set1_ps(s1), 1);
}

static inline __m512 q8_chunk(const int8_t *p, const struct chunk *k, __m512 acc)
{
	__m512i wv = _mm512_maskz_loadu_epi8(k->m, p);
	wv = _mm512_mask_sub_epi8(wv, k->neg, _mm512_setzero_si512(), wv);
	__m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), k->ax, wv);
	return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), k->xs, acc);
}

static inline __m512 q4_chunk(const uint8_t *p, const struct chunk *k, __m512 ws,
			      __m512 acc)
{
	const __m256i mask = _mm256_set1_epi8(15);
	__m256i b = _mm256_maskz_loadu_epi8(k->two ? 0xffffffffu : 0xffffu, p);
	__m256i lo = _mm256_and_si256(b, mask);
	__m256i hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);
	/* [lo0 lo1 hi0 hi1] -> [lo0 hi0 lo1 hi1]: each block in column order */
	__m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
	u = _mm512_shuffle_i64x2(u, u, _MM_SHUFFLE(3, 1, 2, 0));
	__m512i d = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, k->xq),
				     k->xsum8);
	return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(k->xs, ws), acc);
}

void matvec_q8a_vnni(const struct wmat *w, const struct q8act *a, float *y,
		     int r0, int r1)
{
	int n = w->cols, q4 = w->type == WT_Q4;
	int G = q4 ? w->group_size : 1, ng = n / G;
	size_t rb = q4 ? (size_t)n / 2 : (size_t)n;  /* bytes per row */
	const uint8_t *base = w->data;
	size_t ahead = prefetch_ahead(4 * rb);
	struct chunk k;
	for (int r = r0; r < r1; r += 4) {
		int R = r1 - r < 4 ? r1 - r : 4;
		__m512 acc[4];
		for (int i = 0; i < R; i++)
			acc[i] = _mm512_setzero_ps();
		for (int c = 0; c < n; c += 64) {
			chunk_load(&k, a, c, n);
			int g0 = c / G, g1 = (c + Q8A_BLOCK) / G;
			for (int i = 0; i < R; i++) {
				const uint8_t *p = base + (size_t)(r + i) * rb + (q4 ? c / 2 : c);
				prefetch_at(p, ahead);
				if (!q4) {
					acc[i] = q8_chunk((const int8_t *)p, &k, acc[i]);
					continue;
				}
				const float *s = w->scales + (size_t)(r + i) * ng;
				__m512 ws = _mm512_insertf32x8(_mm512_set1_ps(s[g0]),
							       _mm256_set1_ps(k.two ? s[g1] : 0.0f), 1);
				acc[i] = q4_chunk(p, &k, ws, acc[i]);
			}
		}
		for (int i = 0; i < R; i++)
			y[r + i] = quant_fold8(_mm256_add_ps(_mm512_castps512_ps256(acc[i]),
							     _mm512_extractf32x8_ps(acc[i], 1))) *
				   (q4 ? 1.0f : w->scales[r + i]);
	}
}
