/* kquant_avx2: the K-quant int8-activation kernel (AVX2), in the order of
 * lib/kernels/kquant.h: a tile's 16 rows as two halves of 8 lanes (the
 * first and second 32 bytes of each 64-byte vector of the record).
 * vpmaddubsw multiplies the unsigned codes by the signed activation codes
 * in pairs (at most 2 * 63 * 127, no saturation) and vpmaddwd with ones
 * adds the pairs, which gives each row's sum over 4 columns exactly. */
#include "kernels/kquant.h"
#include "kernels/prefetch.h"

#include <immintrin.h>
#include <string.h>

#define KQ_T 4   /* inputs per pass over a half tile */

static inline __m256 widen_u8(const unsigned char *p)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

static inline __m256 widen_i8(const unsigned char *p)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

static inline __m256i dot4(__m256i codes, const int8_t *aq)
{
	__m256i p = _mm256_maddubs_epi16(codes, _mm256_set1_epi32(kq_group4(aq)));
	return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* Rows of half `half` (lanes 8 half .. 8 half + 7) of tile `tile` for
 * T <= KQ_T inputs; mask: the lanes to store. */
static inline __attribute__((always_inline)) void
half_pass(const struct wmat *w, int tile, int half, __m256i mask, float *y, int ldy,
	  const struct q8act *a, const int T, const int q6, const int nb)
{
	enum wtype type = q6 ? WT_Q6K : nb ? WT_Q5K : WT_Q4K;
	int nsb = w->cols / KQ_SB, o = 32 * half, l0 = 8 * half;
	size_t rb = kq_rec_bytes(type);
	const __m256i lo4 = _mm256_set1_epi8(15);
	__m256 acc[KQ_T];
	_Pragma("GCC unroll 4") for (int t = 0; t < T; t++)
		acc[t] = _mm256_setzero_ps();
	for (int s = 0; s < nsb; s++) {
		const unsigned char *rec = kq_rec(w, tile, s);
		if (half == 0) {  /* the second half reads the same lines */
			prefetch_lines(rec, rb);
			prefetch_page(rec, rb);
		}
		const unsigned char *sc = rec + kq_off_sc(type), *nib = rec + kq_off_nib(type);
		const unsigned char *hb = rec + kq_off_high(type);
		__m256 d = _mm256_loadu_ps((const float *)(rec + KQ_OFF_D) + l0);
		__m256 dmin = q6 ? d : _mm256_loadu_ps((const float *)(rec + KQ_OFF_DMIN) + l0);
		for (int kk = 0; kk < 8; kk++) {
			int k = 8 * s + kk;
			__m256i v[8];
			_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
				__m256i x = _mm256_loadu_si256((const __m256i *)(nib + 256 * kk + 64 * j + o));
				v[j] = _mm256_and_si256(x, lo4);
				v[j + 4] = _mm256_and_si256(_mm256_srli_epi16(x, 4), lo4);
			}
			__m256i hv[2];
			_Pragma("GCC unroll 2") for (int i = 0; i < nb; i++)
				hv[i] = _mm256_loadu_si256(
					(const __m256i *)(hb + HB_VECTOR * (nb * kk + i) + o));
			_Pragma("GCC unroll 8") for (int g = 0; nb && g < 8; g++)
				v[g] = hb_merge256(v[g], hv[g * nb / 8], g, nb);
			__m256 ds0, ds1, dm;
			if (q6) {
				ds0 = _mm256_mul_ps(d, widen_i8(sc + 16 * (2 * kk) + l0));
				ds1 = _mm256_mul_ps(d, widen_i8(sc + 16 * (2 * kk + 1) + l0));
				dm = ds1;
			} else {
				ds0 = _mm256_mul_ps(d, widen_u8(sc + 16 * kk + l0));
				dm = _mm256_mul_ps(dmin, widen_u8(rec + KQ_OFF_M + 16 * kk + l0));
				ds1 = dm;
			}
			_Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {
				const int8_t *aq = a[t].q + 32 * k;
				const int32_t *h = a[t].hsums + 2 * k;
				__m256 as = _mm256_set1_ps(a[t].scales[k]);
				__m256i i0 = dot4(v[0], aq), i1 = dot4(v[4], aq + 16);
				_Pragma("GCC unroll 3") for (int g = 1; g < 4; g++) {
					i0 = _mm256_add_epi32(i0, dot4(v[g], aq + 4 * g));
					i1 = _mm256_add_epi32(i1, dot4(v[g + 4], aq + 16 + 4 * g));
				}
				if (q6) {
					i0 = _mm256_sub_epi32(i0, _mm256_set1_epi32(32 * h[0]));
					i1 = _mm256_sub_epi32(i1, _mm256_set1_epi32(32 * h[1]));
					acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), _mm256_mul_ps(ds0, as), acc[t]);
					acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(ds1, as), acc[t]);
				} else {
					__m256i i = _mm256_add_epi32(i0, i1);
					acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), _mm256_mul_ps(ds0, as), acc[t]);
					acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(-(float)a[t].sums[k]),
								 _mm256_mul_ps(dm, as), acc[t]);
				}
			}
		}
	}
	_Pragma("GCC unroll 4") for (int t = 0; t < T; t++)
		_mm256_maskstore_ps(y + (size_t)t * (size_t)ldy + (size_t)tile * KQ_TILE + l0, mask,
				    acc[t]);
}

/* Every half tile that holds a row of [r0, r1), KQ_T inputs at a time, then
 * two, one (each count a constant, so that the accumulators stay in
 * registers). */
static inline __attribute__((always_inline)) void
tiles(const struct kern_mm *m, const int q6, const int nb)
{
	int r0 = m->r0, r1 = m->r1, T = m->T;
	for (int tile = r0 / KQ_TILE; tile * KQ_TILE < r1; tile++)
		for (int half = 0; half < 2; half++) {
			int lo = tile * KQ_TILE + 8 * half;
			if (lo >= r1 || lo + 8 <= r0)
				continue;
			int mk[8];
			for (int i = 0; i < 8; i++)
				mk[i] = lo + i >= r0 && lo + i < r1 ? -1 : 0;
			__m256i mask = _mm256_loadu_si256((const __m256i *)mk);
			float *y = m->y;
			const struct q8act *a = m->xa;
			int t = 0, ldy = m->ldy;
			for (; t + KQ_T <= T; t += KQ_T)
				half_pass(m->w, tile, half, mask, y + (size_t)t * ldy, ldy, a + t, KQ_T, q6,
					  nb);
			if (t + 2 <= T) {
				half_pass(m->w, tile, half, mask, y + (size_t)t * ldy, ldy, a + t, 2, q6, nb);
				t += 2;
			}
			if (t < T)
				half_pass(m->w, tile, half, mask, y + (size_t)t * ldy, ldy, a + t, 1, q6, nb);
		}
}

void kq_q8a_avx2(const struct kern_mm *m)
{
	switch (m->w->type) {
	case WT_Q4K: tiles(m, 0, 0); return;
	case WT_Q5K: tiles(m, 0, 1); return;
	default: tiles(m, 1, 2); return;
	}
}
