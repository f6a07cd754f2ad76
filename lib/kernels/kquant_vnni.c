/* kquant_vnni: the K-quant int8-activation kernel (AVX-512 VNNI), in the
 * order of lib/kernels/kquant.h, lanes = the 16 rows of a tile.
 *
 * Per block of 32 columns, the 4 nibble vectors of the record give 8
 * vectors of codes (16 rows x 4 columns each), the block's high vectors
 * add the fifth and sixth bits (highbits.h: a shift and a vpternlogd a
 * vector), and one vpdpbusd per vector multiplies them
 * (unsigned) by the 4 activation codes of that group broadcast (signed).
 * The codes are unpacked once per block and reused by up to KQ_T inputs. */
#include "kernels/kquant.h"
#include "kernels/prefetch.h"

#include <immintrin.h>
#include <string.h>

#define KQ_T 4   /* inputs per pass over a tile */

static inline __m512 widen_u8(const unsigned char *p)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

static inline __m512 widen_i8(const unsigned char *p)
{
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

/* Rows `rows` (a mask of the tile's lanes) of tile `tile` for T <= KQ_T
 * inputs. q6: Q6_K; nb: bits - 4. */
static inline __attribute__((always_inline)) void
tile_pass(const struct wmat *w, int tile, __mmask16 rows, float *y, int ldy,
	  const struct q8act *a, const int T, const int q6, const int nb)
{
	enum wtype type = q6 ? WT_Q6K : nb ? WT_Q5K : WT_Q4K;
	int nsb = w->cols / KQ_SB;
	size_t rb = kq_rec_bytes(type);
	const __m512i lo4 = _mm512_set1_epi8(15);
	__m512 acc[KQ_T];
	_Pragma("GCC unroll 4") for (int t = 0; t < T; t++)
		acc[t] = _mm512_setzero_ps();
	for (int s = 0; s < nsb; s++) {
		const unsigned char *rec = kq_rec(w, tile, s);
		prefetch_page(rec, rb);
		const unsigned char *sc = rec + kq_off_sc(type), *nib = rec + kq_off_nib(type);
		const unsigned char *hb = rec + kq_off_high(type);
		__m512 d = _mm512_loadu_ps((const float *)(rec + KQ_OFF_D));
		__m512 dmin = q6 ? d : _mm512_loadu_ps((const float *)(rec + KQ_OFF_DMIN));
		for (int kk = 0; kk < 8; kk++) {
			int k = 8 * s + kk;
			prefetch_lines_part(rec, rb, kk, 8);
			__m512i v[8];
			_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
				__m512i x = _mm512_loadu_si512(nib + 256 * kk + 64 * j);
				v[j] = _mm512_and_si512(x, lo4);
				v[j + 4] = _mm512_and_si512(_mm512_srli_epi16(x, 4), lo4);
			}
			__m512i hv[2];
			_Pragma("GCC unroll 2") for (int i = 0; i < nb; i++)
				hv[i] = hb_load512(hb + HB_VECTOR * (nb * kk + i));
			_Pragma("GCC unroll 8") for (int g = 0; nb && g < 8; g++)
				v[g] = hb_merge512(v[g], hv[g * nb / 8], g, nb);
			__m512 ds0, ds1, dm;
			if (q6) {
				ds0 = _mm512_mul_ps(d, widen_i8(sc + 16 * (2 * kk)));
				ds1 = _mm512_mul_ps(d, widen_i8(sc + 16 * (2 * kk + 1)));
				dm = ds1;
			} else {
				ds0 = _mm512_mul_ps(d, widen_u8(sc + 16 * kk));
				dm = _mm512_mul_ps(dmin, widen_u8(rec + KQ_OFF_M + 16 * kk));
				ds1 = dm;
			}
			_Pragma("GCC unroll 4") for (int t = 0; t < T; t++) {
				const int8_t *aq = a[t].q + 32 * k;
				const int32_t *h = a[t].hsums + 2 * k;
				__m512 as = _mm512_set1_ps(a[t].scales[k]);
				__m512i i0 = _mm512_setzero_si512(), i1 = _mm512_setzero_si512();
				_Pragma("GCC unroll 4") for (int g = 0; g < 4; g++)
					i0 = _mm512_dpbusd_epi32(i0, v[g], _mm512_set1_epi32(kq_group4(aq + 4 * g)));
				_Pragma("GCC unroll 4") for (int g = 4; g < 8; g++)
					i1 = _mm512_dpbusd_epi32(i1, v[g], _mm512_set1_epi32(kq_group4(aq + 4 * g)));
				if (q6) {
					i0 = _mm512_sub_epi32(i0, _mm512_set1_epi32(32 * h[0]));
					i1 = _mm512_sub_epi32(i1, _mm512_set1_epi32(32 * h[1]));
					acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i0), _mm512_mul_ps(ds0, as), acc[t]);
					acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i1), _mm512_mul_ps(ds1, as), acc[t]);
				} else {
					__m512i i = _mm512_add_epi32(i0, i1);
					acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(ds0, as), acc[t]);
					acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(-(float)a[t].sums[k]),
								 _mm512_mul_ps(dm, as), acc[t]);
				}
			}
		}
	}
	_Pragma("GCC unroll 4") for (int t = 0; t < T; t++)
		_mm512_mask_storeu_ps(y + (size_t)t * (size_t)ldy + (size_t)tile * KQ_TILE, rows, acc[t]);
}

/* Every tile that holds a row of [r0, r1), KQ_T inputs at a time, then two,
 * one (each count a constant, so that the accumulators stay in registers). */
static inline __attribute__((always_inline)) void
tiles(const struct kern_mm *m, const int q6, const int nb)
{
	int r0 = m->r0, r1 = m->r1, T = m->T;
	for (int tile = r0 / KQ_TILE; tile * KQ_TILE < r1; tile++) {
		int lo = tile * KQ_TILE, from = r0 > lo ? r0 - lo : 0;
		int to = r1 < lo + KQ_TILE ? r1 - lo : KQ_TILE;
		__mmask16 rows = (__mmask16)(((1u << to) - 1) & ~((1u << from) - 1));
		float *y = m->y;
		const struct q8act *a = m->xa;
		int t = 0;
		for (; t + KQ_T <= T; t += KQ_T)
			tile_pass(m->w, tile, rows, y + (size_t)t * m->ldy, m->ldy, a + t, KQ_T, q6, nb);
		if (t + 2 <= T) {
			tile_pass(m->w, tile, rows, y + (size_t)t * m->ldy, m->ldy, a + t, 2, q6, nb);
			t += 2;
		}
		if (t < T)
			tile_pass(m->w, tile, rows, y + (size_t)t * m->ldy, m->ldy, a + t, 1, q6, nb);
	}
}

void kq_q8a_vnni(const struct kern_mm *m)
{
	switch (m->w->type) {
	case WT_Q4K: tiles(m, 0, 0); return;
	case WT_Q5K: tiles(m, 0, 1); return;
	default: tiles(m, 1, 2); return;
	}
}
