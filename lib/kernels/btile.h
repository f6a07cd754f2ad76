/* btile: bf16 matrices laid out for the bf16-activation product, and the
 * scalar reference of that product.
 *
 * With bf16 activations (`--bf16-activations`, lib/model/forward.h) every
 * product by a bf16 matrix is dot_b16 (lib/kernels/kernels.h), which
 * vdpbf16ps computes 32 multiply-adds at a time: a bf16 pair of weights
 * times a bf16 pair of inputs in each of 16 lanes. SIMD lanes are output
 * rows, as in qtile.h: each lane's sum is a whole output, with no fold of
 * lanes at the end, and one input pair, broadcast, meets 16 rows. So a
 * bf16 matrix is repacked at load (btile_pack_rows, model_tile_b16 in
 * lib/model/model.h) into tiles of BTILE_ROWS = 64 rows.
 *
 * Layout (w->tiled, type WT_BF16; data 64-byte aligned; btile_bytes): the
 * tiles of rows 64i .. 64i + 63, in order, one sequential stream, each
 * btile_tile_bytes long. A tile is np = ceil(cols / 2) column pairs in
 * increasing order, 256 bytes each: four vectors of 64 bytes, whose 32-bit
 * lane l in vector v holds row 64i + 16v + l's columns 2p (low half) and
 * 2p + 1 (high half). Rows beyond `rows`, and column `cols` when cols is
 * odd, are zeros.
 *
 * The inputs (struct kern_mm's xb) are bf16 rows btile_ldx(cols) apart,
 * the element past an odd row zero, so that every pair is whole.
 */
#ifndef BTILE_H
#define BTILE_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/kernels.h"
#include "kernels/weights.h"

#define BTILE_ROWS 64

/* Column pairs of a row, and the distance between input rows. */
static inline int btile_pairs(int cols)
{
	return (cols + 1) / 2;
}

static inline int btile_ldx(int cols)
{
	return 2 * btile_pairs(cols);
}

/* Bytes of one tile, and of the whole tiled matrix. */
static inline size_t btile_tile_bytes(int cols)
{
	return (size_t)BTILE_ROWS * 2 * (size_t)btile_ldx(cols);
}

static inline size_t btile_bytes(int rows, int cols)
{
	return (size_t)((rows + BTILE_ROWS - 1) / BTILE_ROWS) * btile_tile_bytes(cols);
}

/* Where element (r, c) of a tiled matrix is, in bf16 elements from data. */
static inline size_t btile_at(int r, int c, int cols)
{
	return (size_t)(r / BTILE_ROWS) * (btile_tile_bytes(cols) / 2) +
	       (size_t)(c / 2) * (2 * BTILE_ROWS) + (size_t)(r % BTILE_ROWS) * 2 +
	       (size_t)(c & 1);
}

/* Rows [r0, r1) of src (WT_BF16, not tiled; r0 a multiple of BTILE_ROWS,
 * r1 too or src->rows) into their tiles in dst; once every row is packed,
 * btile_view makes *out the view (out may be src). So a loader can give
 * back each part of src as soon as it is packed. */
void btile_pack_rows(const struct wmat *src, void *dst, int r0, int r1);
void btile_view(const struct wmat *src, void *dst, struct wmat *out);

/* Row r of a tiled matrix, widened to float. */
void btile_row(const struct wmat *w, int r, float *out);

#endif
