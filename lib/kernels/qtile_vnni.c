/* qtile_vnni: the int8-activation product on AVX-512 VNNI (lib/kernels/qtile.h).
 *
 * One zmm lane per row of a tile. For each 32-column block the tile's
 * codes are loaded once (int4: four 64-byte chunks, each giving two quads
 * by two masks) and multiplied by up to eight tokens: vpdpbusd takes the
 * unsigned codes and a token's four codes broadcast, starting from -128 or
 * -8 times the token's block sum, which makes the int32 sum exactly the
 * signed one; then one conversion, one scale product and one fma per 16
 * rows. The int4 high nibbles go in unshifted (16 times the code), into a
 * sum of their own that one exact shift divides by 16. Q5's nibbles are
 * unpacked as int4's, shifted, and the block's vector of fifth bits adds
 * them (highbits.h: a shift and a vpternlogd a vector). IQ4's nibbles,
 * unpacked as Q5's, become their levels plus 128 by one vpshufb each, and
 * then go in as int8's codes. */
#include "kernels/qtile_isa.h"
#include "kernels/prefetch.h"

#include <immintrin.h>
#include <string.h>

static inline __m512i quad(const int8_t *q)
{
	int32_t v;
	memcpy(&v, q, 4);
	return _mm512_set1_epi32(v);
}

/* Tokens a[0 .. NT) against one tile (NT, type and the scales s constants
 * where this is inlined); the lanes of mask m go to y + rbase. */
static inline __attribute__((always_inline)) void
tile(const uint8_t *p, const struct qtile_geom *g, const struct q8act *a, float *y, int ldy,
     int rbase, __mmask16 m, const enum wtype type, const enum qtile_scales s, const int NT)
{
	const int q4 = type == WT_Q4, q5 = wt_is_q5(type), iq4 = type == WT_IQ4;
	const int nib = q4 || q5 || iq4, G = qtile_group(type, s);
	const size_t cb = qtile_code_bytes(type);
	const uint8_t *line = p, *codes = p + QTILE_LINE;
	const int off = q4 ? -8 : type == WT_Q50 ? -16 : type == WT_Q51 ? 0 : -128;
	__m512i lut = _mm512_setzero_si512();  /* WT_IQ4: the levels plus 128 */
	if (iq4)
		lut = _mm512_broadcast_i32x4(_mm_add_epi8(
			_mm_loadu_si128((const __m128i *)qtile_iq4_level), _mm_set1_epi8((char)128)));
	__m512 acc[8];  /* NT <= 8; not acc[NT], which GCC keeps in memory */
	_Pragma("GCC unroll 8") for (int t = 0; t < NT; t++)
		acc[t] = _mm512_setzero_ps();
	for (int b = 0; b < g->nb; b++) {
		prefetch_page(codes, cb);
		if (q5 && prefetch_tuning.q5_lines)  /* a group's first block: its line too */
			prefetch_lines(G && b % G == 0 ? line : codes,
				       cb + (G && b % G == 0 ? QTILE_LINE : 0));
		__m512i u[8];
		if (nib) {
			const __m512i lo = _mm512_set1_epi8(15), hi = _mm512_set1_epi8((char)0xf0);
			_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
				__m512i v = _mm512_load_si512(codes + 64 * k);
				u[k] = _mm512_and_si512(v, lo);
				u[k + 4] = q4 ? _mm512_and_si512(v, hi)
					      : _mm512_and_si512(_mm512_srli_epi16(v, 4), lo);
			}
		} else {
			_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
				u[k] = _mm512_load_si512(codes + 64 * k);
		}
		if (q5) {
			const __m512i h = hb_load512(codes + 256);
			_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
				u[k] = hb_merge512(u[k], h, k, 1);
		}
		if (iq4)
			_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)
				u[k] = _mm512_shuffle_epi8(lut, u[k]);
		__m512 ws = _mm512_setzero_ps(), wm = _mm512_setzero_ps();
		if (s == QT_F32)
			ws = _mm512_load_ps((const float *)line);
		else if (s == QT_F16)
			ws = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(
				(const uint16_t *)line + (size_t)(b % G) * QTILE_ROWS)));
		if (type == WT_Q51)
			wm = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(line + QTILE_MINS)));
		_Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {
			const int8_t *q = a[t].q + (size_t)b * Q8A_BLOCK;
			__m512i d0 = _mm512_set1_epi32(off * a[t].sums[b]);
			__m512i d1 = _mm512_setzero_si512();
			if (nib) {
				_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
					d0 = _mm512_dpbusd_epi32(d0, u[k], quad(q + 4 * k));
					d1 = _mm512_dpbusd_epi32(d1, u[k + 4], quad(q + 4 * k + 16));
				}
				if (q4)
					d1 = _mm512_srai_epi32(d1, 4);
			} else {
				_Pragma("GCC unroll 4") for (int k = 0; k < 8; k += 2) {
					d0 = _mm512_dpbusd_epi32(d0, u[k], quad(q + 4 * k));
					d1 = _mm512_dpbusd_epi32(d1, u[k + 1], quad(q + 4 * k + 4));
				}
			}
			__m512 as = _mm512_set1_ps(a[t].scales[b]), sc = as;
			if (s != QT_ROW)
				sc = _mm512_mul_ps(sc, ws);
			acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), sc,
						 acc[t]);
			if (type == WT_Q51)
				acc[t] = _mm512_fmadd_ps(_mm512_set1_ps((float)a[t].sums[b]),
							 _mm512_mul_ps(as, wm), acc[t]);
		}
		qtile_walk_next(&line, &codes, cb, G, b);
	}
	_Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {
		__m512 r = acc[t];
		if (s == QT_ROW)
			r = _mm512_mul_ps(r, _mm512_load_ps((const float *)p));
		_mm512_mask_storeu_ps(y + (size_t)t * ldy + rbase, m, r);
	}
}

/* Every tile that holds a row of [r0, r1), eight tokens at a time, then
 * four, two, one. */
static inline __attribute__((always_inline)) void
tiles(const struct kern_mm *mm, const struct qtile_geom *g, const enum wtype type,
      const enum qtile_scales s)
{
	float *y = mm->y;
	int ldy = mm->ldy, r0 = mm->r0, r1 = mm->r1, T = mm->T;
	const struct q8act *a = mm->xa;
	for (int rb = r0 / QTILE_ROWS * QTILE_ROWS; rb < r1; rb += QTILE_ROWS) {
		const uint8_t *p = (const uint8_t *)mm->w->data + (size_t)(rb / QTILE_ROWS) * g->tile;
		int lo = r0 > rb ? r0 - rb : 0, hi = r1 - rb < QTILE_ROWS ? r1 - rb : QTILE_ROWS;
		__mmask16 m = (__mmask16)((0xffffu >> (QTILE_ROWS - hi)) & (0xffffu << lo));
		int t = 0;
		for (; t + 8 <= T; t += 8)
			tile(p, g, a + t, y + (size_t)t * ldy, ldy, rb, m, type, s, 8);
		if (t + 4 <= T) {
			tile(p, g, a + t, y + (size_t)t * ldy, ldy, rb, m, type, s, 4);
			t += 4;
		}
		if (t + 2 <= T) {
			tile(p, g, a + t, y + (size_t)t * ldy, ldy, rb, m, type, s, 2);
			t += 2;
		}
		if (t < T)
			tile(p, g, a + t, y + (size_t)t * ldy, ldy, rb, m, type, s, 1);
	}
}

/* The table's entry, for every tiled type. */
void qtile_mm_vnni(const struct kern_mm *m)
{
	qtile_run(m, tiles);
}
