/* qtile: integer matrices laid out for the int8-activation product, and
 * that product.
 *
 * With int8 activations (the default for int8 and int4 weights,
 * lib/model/forward.h) every product by a WT_Q8 or WT_Q4 matrix runs on
 * integers: the activations are quantized in blocks of Q8A_BLOCK = 32
 * (struct q8act, lib/kernels/quant.h) and each block's integer sum is
 * scaled once. So that the float work is paid once per 16 rows, not once
 * per row, SIMD lanes are output rows: a matrix is repacked at load
 * (qtile_pack) into tiles of QTILE_ROWS = 16 rows, and a tile's integer
 * sums for one 32-column block fill one 16-lane vector.
 *
 * Layout (w->tiled; data 64-byte aligned; qtile_bytes): the tiles of rows
 * 16i .. 16i + 15, in order, each qtile_tile_bytes long, one sequential
 * stream. The columns are cut into nb = ceil(cols / 32) blocks; rows
 * beyond `rows` and columns beyond `cols` hold the code of 0 with scale 0.
 * A tile is groups of G blocks (qtile_group; the last may hold fewer),
 * each a 64-byte line of its blocks' scales, then their codes, so that a
 * block's scales arrive in the stream just before its codes:
 *   scales  QT_ROW (int8, a scale per row): one group of every block, its
 *           line the 16 floats of the rows' scales, row 16i + l's at l;
 *           QT_F32 (a scale per 32 columns: int4, and int8 in groups):
 *           G = 1, the line the block's 16 floats, row 16i + l's at l;
 *           QT_F16: the same as IEEE halves (where every scale is one
 *           exactly: GGUF's Q4_0 and Q8_0), G = 2, block j of the group
 *           at halves 16j .. 16j + 15.
 *   codes   block after block. Stored unsigned: u = q + 128 (int8) or
 *           u = q + 8 (int4). int8, 512 bytes a block: 8 quads of 64
 *           bytes; quad k holds, at bytes 4l .. 4l + 3, row 16i + l's
 *           columns 32b + 4k .. 32b + 4k + 3. int4, 256 bytes a block: 4
 *           chunks of 64 bytes; byte 4l + j of chunk k holds column
 *           32b + 4k + j of row 16i + l in its low nibble and column
 *           32b + 16 + 4k + j in its high nibble.
 * (Scales apart from the codes, at the head of the tile, streamed slower
 * from memory: docs/performance.md, "Scales beside their codes".)
 *
 * Q5_0 and Q5_1 (WT_Q50, WT_Q51: GGUF's 5-bit types, put in tiles at load,
 * lib/model/gguf_model.c, and always tiled) take the same layout with
 * QT_F16 scales: the line holds the halves d as above, except that for
 * WT_Q51 G = 1 and the line holds the block's 16 halves d, then (from
 * byte QTILE_MINS) its 16 halves m; a block's codes are 320 bytes,
 * the low 4 bits of u as int4's 256 (u in 0..31, w = d * (u - 16) or
 * d * u + m), then one 64-byte vector of the fifth bits: byte 4l + i
 * holds, at bit g (g < 8), bit 4 of column 32b + 4g + i of row 16i + l
 * (lib/kernels/highbits.h, which kquant.h's Q5_K and Q6_K share).
 * Padding rows are all zero bytes (scale 0).
 *
 * WT_IQ4 (GGUF's IQ4_NL and IQ4_XS, put in tiles at load, always tiled)
 * takes int4's layout, QT_F16 scales for IQ4_NL (its halves d) and QT_F32
 * for IQ4_XS (d times a 6-bit scale minus 32: a float, rarely a half); its
 * nibbles u are indices, and the codes are qtile_iq4_level[u] (-127..113).
 *
 * The canonical order (every level gives these bits): for row r and an
 * input a (codes a.q, block scales a.s), acc starts at +0 and for each
 * block b in increasing order
 *   d   = sum over the block's columns of q[r][c] * a.q[c]   (exact int32)
 *   acc = fmaf((float)d, s, acc)
 * with s = a.s[b] * ws[r][b] rounded to float (scales per block; a half
 * widened exactly first), or s = a.s[b] (QT_ROW); the result is acc, times
 * the row's scale for QT_ROW. Q5_0's codes are u - 16; Q5_1's are u, and
 * after each block's fma comes acc = fmaf((float)a.sums[b], m', acc) with
 * m' = a.s[b] * m[r][b] rounded to float. Integer sums are exact in any
 * order, so the kernels may form d however suits them (the unsigned codes
 * times the codes, minus 128, 8 or 16 times the block's code sum
 * a.sums[b]; WT_IQ4's levels looked up plus 128, as int8's).
 */
#ifndef QTILE_H
#define QTILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "core/cpu.h"
#include "kernels/highbits.h"
#include "kernels/quant.h"
#include "kernels/weights.h"

#define QTILE_ROWS 16
#define QTILE_LINE 64    /* bytes of a group's line of scales */
#define QTILE_MINS 32    /* where Q5_1's mins start in its line */

/* The scales of a tiled matrix (w->tiled - 1). */
enum qtile_scales { QT_ROW, QT_F32, QT_F16 };

/* IQ4_NL's and IQ4_XS's 16 levels, the codes of WT_IQ4's indices. */
static const int8_t qtile_iq4_level[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
					    1,    13,   25,  38,  53,  69,  89,  113 };

/* The bytes of one block's codes: int4's and WT_IQ4's nibbles, Q5's
 * nibbles and fifth bits, int8's. */
static inline size_t qtile_code_bytes(enum wtype type)
{
	return type == WT_Q4 || type == WT_IQ4 ? 256 : wt_is_q5(type) ? 256 + HB_VECTOR : 512;
}

/* The blocks of a group (G above): as many as fill a line with their
 * scales, or 0 for QT_ROW's one group of every block. */
static inline int qtile_group(enum wtype type, enum qtile_scales s)
{
	return s == QT_ROW ? 0 : s == QT_F16 && type != WT_Q51 ? 2 : 1;
}

/* Bytes of one tile, and of the whole tiled matrix, for a WT_Q8 or WT_Q4
 * matrix of cols columns with these scales. */
size_t qtile_tile_bytes(enum wtype type, int cols, enum qtile_scales s);
size_t qtile_bytes(enum wtype type, int rows, int cols, enum qtile_scales s);

/* The scales qtile_pack gives src (WT_Q8 or WT_Q4, row-major, not tiled):
 * QT_ROW for int8 with a scale per row, QT_F16 when every group scale is
 * exactly a half, else QT_F32. */
enum qtile_scales qtile_scales_for(const struct wmat *src);

/* Repacks src into dst's memory (qtile_bytes, 64-byte aligned) and makes
 * *out its view (out may be src): src's type, rows and cols, tiled,
 * data = dst. */
void qtile_pack(const struct wmat *src, void *dst, struct wmat *out);

/* The same in parts: rows [r0, r1) of src (r0 a multiple of QTILE_ROWS,
 * r1 too or src->rows) into their tiles in dst, with the scales s that
 * qtile_scales_for gives the whole of src; once every row is packed,
 * qtile_view makes *out the view (out may be src). So a loader can give
 * back each part of src as soon as it is packed. */
void qtile_pack_rows(const struct wmat *src, enum qtile_scales s, void *dst, int r0, int r1);
void qtile_view(const struct wmat *src, enum qtile_scales s, void *dst, struct wmat *out);

/* qtile_code and qtile_scale (declared in quant.h, which quant_code and
 * quant_scale reach them through): weight (r, c)'s code, and its scale
 * (the row's for QT_ROW). */

/* Row l's 32 codes c of one block, written into a tile (for qtile's int4
 * and Q5 blocks and kquant.h's sub-blocks alike): the low nibbles into the
 * block's 4 chunks of 64 bytes at nib (chunk k, byte 4l + j: columns
 * 4k + j and 16 + 4k + j); the bits above them go in with hb_put
 * (highbits.h). */
static inline void qtile_put_nibbles(uint8_t *nib, int l, const uint8_t c[32])
{
	for (int k = 0; k < 4; k++)
		for (int j = 0; j < 4; j++)
			nib[64 * k + 4 * l + j] = (uint8_t)((c[4 * k + j] & 15) |
							    (c[16 + 4 * k + j] & 15) << 4);
}

/* Q5_0 and Q5_1 (w->tiled set, QT_F16; cols a multiple of 32): block b
 * of row r (its 32 codes u, its halves d and m; m unused for WT_Q50) into
 * data (w->data's buffer, writable, qtile_bytes long and zeroed first). */
void qtile_q5_put(const struct wmat *w, void *data, int r, int b, const uint8_t u[32],
		  uint16_t d, uint16_t m);

/* WT_IQ4 (w->tiled set): block b of row r (its 32 indices u, its scale
 * s, a half exactly for QT_F16) into data (w->data's buffer, writable,
 * qtile_bytes long and zeroed first). */
void qtile_iq4_put(const struct wmat *w, void *data, int r, int b, const uint8_t u[32],
		   float s);

/* Row r of a Q5_0, Q5_1 or WT_IQ4 matrix dequantized: d * (u - 16),
 * fl(d * u) + m, s * level[u], each step rounded to float. */
void qtile_gguf_row(const struct wmat *w, int r, float *out);

/* The product (y[t * ldy + r] for r in [r0, r1) and t < T from the
 * inputs a[t], each w->cols long, in the order above) is the entry
 * mm[WT_Q4, WT_Q8, WT_Q50, WT_Q51 or WT_IQ4][KA_Q8] of each level's kernel table
 * (lib/kernels/kernels.h), reached through kern_matmul
 * (lib/kernels/matmul.h): AVX-512 with VNNI, AVX2, or the scalar
 * reference. */

#endif
