/* highbits: where the tiles keep the bits above the low nibble of 5- and
 * 6-bit codes (qtile.h's Q5_0 and Q5_1 blocks, kquant.h's Q5_K and Q6_K
 * blocks), and the one way every kernel reads them (internal to
 * lib/kernels).
 *
 * A block of a tile is 16 lanes (rows) x 32 columns. Its codes are read as
 * 8 vectors of 64 bytes: vector g holds column 4g + j of lane l at byte
 * 4l + j (its low nibble from the block's nibble chunks, qtile.h). The
 * nb = bits - 4 high bits of each code (1 for Q5, 2 for Q6_K) are nb
 * vectors of 64 bytes more: those of vector g's byte i are bits
 * s .. s + nb - 1 of byte i of high vector g * nb / 8, with
 * s = g * nb % 8. So each code vector takes its high bits from one vector
 * by one shift and one mask, aligned with its own bytes, at every SIMD
 * width (an AVX2 half tile, lanes 8h .. 8h + 7, reads bytes 32h .. 32h + 31
 * of both), with no mask registers. A tile's high vectors start zeroed:
 * hb_put ORs one lane's bits in.
 *
 * Include it from any file; the SIMD forms exist where the file is
 * compiled for AVX2 or AVX-512.
 */
#ifndef HIGHBITS_H
#define HIGHBITS_H

#include <stdint.h>

#define HB_VECTOR 64   /* bytes of one high vector */

/* Lane l's 32 codes c of one block: their bits from 4 up into the block's
 * nb high vectors at hb. */
static inline void hb_put(uint8_t *hb, int l, const uint8_t c[32], int nb)
{
	for (int g = 0; g < 8; g++)
		for (int j = 0; j < 4; j++)
			hb[HB_VECTOR * (g * nb / 8) + 4 * l + j] |=
				(uint8_t)((c[4 * g + j] >> 4) << (g * nb % 8));
}

/* Lane l's code at column c (< 32) of the block: its bits from 4 up, as
 * the value to add to its low nibble (a multiple of 16). */
static inline int hb_get(const uint8_t *hb, int l, int c, int nb)
{
	int g = c / 4;
	int v = hb[HB_VECTOR * (g * nb / 8) + 4 * l + c % 4] >> (g * nb % 8);
	return (v & ((1 << nb) - 1)) << 4;
}

#ifdef __AVX2__
#include <immintrin.h>

/* Code vector g's low nibbles u (8 lanes: one half's 32 bytes) with its
 * high bits from the half's high vector h put in; g and nb constants
 * where this is inlined. */
static inline __attribute__((always_inline)) __m256i hb_merge256(__m256i u, __m256i h, int g,
								 int nb)
{
	int s = g * nb % 8;
	if (s < 4)
		h = _mm256_slli_epi16(h, 4 - s);
	else if (s > 4)
		h = _mm256_srli_epi16(h, s - 4);
	return _mm256_or_si256(u, _mm256_and_si256(h, _mm256_set1_epi8((char)(((1 << nb) - 1) << 4))));
}
#endif

#ifdef __AVX512F__
/* A high vector loaded once into a register, for the merges below: GCC
 * otherwise folds a load of it into each shift, one load per code vector,
 * which made the Q5 tiles slower in cache than the masks they had before
 * (docs/performance.md, "High bits in vectors"; on AVX2 the two ways
 * measured the same). */
static inline __attribute__((always_inline)) __m512i hb_load512(const void *p)
{
	__m512i h = _mm512_loadu_si512(p);
	__asm__("" : "+v"(h));
	return h;
}

/* The same for 16 lanes: u | (h shifted & the bits), one vpternlogd. */
static inline __attribute__((always_inline)) __m512i hb_merge512(__m512i u, __m512i h, int g,
								 int nb)
{
	int s = g * nb % 8;
	if (s < 4)
		h = _mm512_slli_epi16(h, 4 - s);
	else if (s > 4)
		h = _mm512_srli_epi16(h, s - 4);
	return _mm512_ternarylogic_epi32(u, h, _mm512_set1_epi8((char)(((1 << nb) - 1) << 4)),
					 0xf8);
}
#endif

#endif
