/* qtile_avx2: the int8-activation product on AVX2 (lib/kernels/qtile.h), for CPUs
 * without AVX-512 VNNI.
 *
 * A tile is two halves of 8 rows, one ymm lane per row. The integer sums
 * come from vpmaddubsw and vpmaddwd, exact for these ranges: int4, the
 * unsigned nibbles (at most 15) times the codes (at most 127 in
 * magnitude), pairs summed in 16 bits over the block's 8 quads (at most
 * 8 x 2 x 15 x 127 = 30480), then -8 times the block sum; int8, |q| times
 * the codes with q's sign moved onto them (pairs at most 2 x 127 x 127),
 * each quad widened to 32 bits; IQ4, its levels (vpshufb of the nibbles)
 * as int8's codes; Q5, its codes (at most 31) likewise, low
 * and high nibbles in sums of their own (at most 4 x 2 x 31 x 127 =
 * 31496), the fifth bits put in from the block's high vector
 * (highbits.h). The float steps are qtile.h's. */
#include "kernels/qtile_isa.h"
#include "kernels/prefetch.h"

#include <immintrin.h>
#include <string.h>

static inline __m256i quad(const int8_t *q)
{
	int32_t v;
	memcpy(&v, q, 4);
	return _mm256_set1_epi32(v);
}

/* The exact int32 sums of one block for the 8 rows of half h, token codes
 * q (the block's 32) and their sum. */
static inline __attribute__((always_inline)) __m256i
block_sum(const uint8_t *codes, int h, const int8_t *q, int32_t sum, const enum wtype type)
{
	const __m256i ones = _mm256_set1_epi16(1);
	if (type == WT_IQ4) {
		const __m256i lo = _mm256_set1_epi8(15), lut = _mm256_broadcastsi128_si256(
			_mm_loadu_si128((const __m128i *)qtile_iq4_level));
		__m256i d = _mm256_setzero_si256();
		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
			__m256i v = _mm256_load_si256((const __m256i *)(codes + 64 * k + 32 * h));
			__m256i w0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, lo));
			__m256i w1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), lo));
			__m256i p0 = _mm256_maddubs_epi16(_mm256_abs_epi8(w0),
							  _mm256_sign_epi8(quad(q + 4 * k), w0));
			__m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(w1),
							  _mm256_sign_epi8(quad(q + 16 + 4 * k), w1));
			d = _mm256_add_epi32(d, _mm256_add_epi32(_mm256_madd_epi16(p0, ones),
								 _mm256_madd_epi16(p1, ones)));
		}
		return d;
	}
	if (type != WT_Q8) {
		const int q5 = wt_is_q5(type);
		const int off = type == WT_Q4 ? -8 : type == WT_Q50 ? -16 : 0;
		const __m256i lo = _mm256_set1_epi8(15);
		/* Q5's fifth bits, after its nibbles (int4 has none to read) */
		const __m256i hv = q5 ? _mm256_load_si256((const __m256i *)(codes + 256 + 32 * h))
				      : lo;
		__m256i p0 = _mm256_setzero_si256(), p1 = _mm256_setzero_si256();
		_Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
			__m256i v = _mm256_load_si256((const __m256i *)(codes + 64 * k + 32 * h));
			__m256i u0 = _mm256_and_si256(v, lo);
			__m256i u1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo);
			if (q5) {
				u0 = hb_merge256(u0, hv, k, 1);
				u1 = hb_merge256(u1, hv, k + 4, 1);
			}
			p0 = _mm256_add_epi16(p0, _mm256_maddubs_epi16(u0, quad(q + 4 * k)));
			p1 = _mm256_add_epi16(p1, _mm256_maddubs_epi16(u1, quad(q + 16 + 4 * k)));
		}
		__m256i d = _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones));
		return _mm256_add_epi32(d, _mm256_set1_epi32(off * sum));
	}
	__m256i d = _mm256_setzero_si256();
	_Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {
		__m256i v = _mm256_xor_si256(
			_mm256_load_si256((const __m256i *)(codes + 64 * k + 32 * h)),
			_mm256_set1_epi8((char)0x80));
		__m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(quad(q + 4 * k), v));
		d = _mm256_add_epi32(d, _mm256_madd_epi16(p, ones));
	}
	return d;
}

/* One half of one tile against tokens a[0 .. NT) (constants where this is
 * inlined); rows [lo, hi) of the half go to y + rbase. */
static inline __attribute__((always_inline)) void
half(const uint8_t *p, const struct qtile_geom *g, int h, const struct q8act *a, float *y,
     int ldy, int rbase, int lo, int hi, const enum wtype type, const enum qtile_scales s,
     const int NT)
{
	const int G = qtile_group(type, s);
	const size_t cb = qtile_code_bytes(type);
	const uint8_t *line = p, *codes = p + QTILE_LINE;
	__m256 acc[4];  /* NT <= 4; not acc[NT], which GCC keeps in memory */
	for (int t = 0; t < NT; t++)
		acc[t] = _mm256_setzero_ps();
	for (int b = 0; b < g->nb; b++) {
		prefetch_page(codes, cb);
		/* (the second half reads the same lines; a group's first block
		 * asks for its line too) */
		if (wt_is_q5(type) && prefetch_tuning.q5_lines && h == 0)
			prefetch_lines(G && b % G == 0 ? line : codes,
				       cb + (G && b % G == 0 ? QTILE_LINE : 0));
		__m256 ws = _mm256_setzero_ps();
		if (s == QT_F32)
			ws = _mm256_load_ps((const float *)line + 8 * h);
		else if (s == QT_F16)
			ws = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(
				(const uint16_t *)line + (size_t)(b % G) * QTILE_ROWS + 8 * h)));
		__m256 wm = _mm256_setzero_ps();
		if (type == WT_Q51)
			wm = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(
				(const uint16_t *)(line + QTILE_MINS) + 8 * h)));
		for (int t = 0; t < NT; t++) {
			__m256i d = block_sum(codes, h, a[t].q + (size_t)b * Q8A_BLOCK, a[t].sums[b], type);
			__m256 as = _mm256_set1_ps(a[t].scales[b]), sc = as;
			if (s != QT_ROW)
				sc = _mm256_mul_ps(sc, ws);
			acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), sc, acc[t]);
			if (type == WT_Q51)
				acc[t] = _mm256_fmadd_ps(_mm256_set1_ps((float)a[t].sums[b]),
							 _mm256_mul_ps(as, wm), acc[t]);
		}
		qtile_walk_next(&line, &codes, cb, G, b);
	}
	for (int t = 0; t < NT; t++) {
		float out[8];
		__m256 r = acc[t];
		if (s == QT_ROW)
			r = _mm256_mul_ps(r, _mm256_load_ps((const float *)p + 8 * h));
		_mm256_storeu_ps(out, r);
		for (int l = lo; l < hi; l++)
			y[(size_t)t * ldy + rbase + l] = out[l - 8 * h];
	}
}

static inline __attribute__((always_inline)) void
tiles(const struct kern_mm *m, const struct qtile_geom *g, const enum wtype type,
      const enum qtile_scales s)
{
	float *y = m->y;
	int ldy = m->ldy, r0 = m->r0, r1 = m->r1, T = m->T;
	const struct q8act *a = m->xa;
	for (int rb = r0 / QTILE_ROWS * QTILE_ROWS; rb < r1; rb += QTILE_ROWS) {
		const uint8_t *p = (const uint8_t *)m->w->data + (size_t)(rb / QTILE_ROWS) * g->tile;
		for (int h = 0; h < 2; h++) {
			int lo = r0 - rb > 8 * h ? r0 - rb : 8 * h;
			int hi = r1 - rb < 8 * h + 8 ? r1 - rb : 8 * h + 8;
			if (hi <= lo)
				continue;
			int t = 0;
			for (; t + 4 <= T; t += 4)
				half(p, g, h, a + t, y + (size_t)t * ldy, ldy, rb, lo, hi, type, s, 4);
			for (; t < T; t++)
				half(p, g, h, a + t, y + (size_t)t * ldy, ldy, rb, lo, hi, type, s, 1);
		}
	}
}

/* The table's entry, for every tiled type. */
void qtile_mm_avx2(const struct kern_mm *m)
{
	qtile_run(m, tiles);
}
