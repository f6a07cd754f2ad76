/* weights: a view of one weight matrix, whatever its storage.
 *
 * The forward pass multiplies activations by matrices stored as float32,
 * bfloat16 or float16 (read directly: 2 bytes per weight, widened exactly
 * in registers) or the quantized formats of the containers. A `struct wmat` describes one such
 * matrix without owning it: data points into a mapping or into memory the
 * model owns. The kernel table (lib/kernels/kernels.h) is indexed by `type`.
 *
 * Layout, for every type: row-major [rows x cols], one row per output
 * feature, as in PyTorch's nn.Linear weight (y = W x).
 *   WT_F32   float    data[rows * cols]
 *   WT_BF16  uint16_t data[rows * cols]
 *   WT_F16   uint16_t data[rows * cols], IEEE binary16 (GGUF's F16)
 *   WT_Q8    int8_t   data[rows * cols]; group_size 0: float scales[rows],
 *            one per row, w = scales[r] * q (our containers); group_size
 *            G > 0: float scales[rows * cols / G], one per G weights along
 *            cols, w = scales[r * (cols / G) + c / G] * q (GGUF's Q8_0,
 *            G = 32)
 *   WT_Q4    uint8_t  data[rows * cols / 2], two weights per byte, group-wise
 *            along cols with group_size weights per group, float
 *            scales[rows * cols / group_size]; the nibble packing and any
 *            offset are defined in lib/kernels/quant.h
 *   WT_Q4K, WT_Q5K, WT_Q6K  GGUF's K-quants, codes and scales in tiles of
 *            16 rows (lib/kernels/kquant.h); no scales array
 *   WT_Q50, WT_Q51  GGUF's Q5_0 (w = d * (u - 16)) and Q5_1 (w = d * u + m),
 *            5-bit codes u with a half d (and m) per 32 weights, always in
 *            the tiles of lib/kernels/qtile.h, tiled 1 + QT_F16 (its
 *            halves); no scales array
 *   WT_IQ4   GGUF's IQ4_NL and IQ4_XS (w = s * level[u]), 4-bit indices u
 *            into the 16 levels of qtile.h's qtile_iq4_level, with a scale
 *            s per 32 weights, always in the tiles of lib/kernels/qtile.h,
 *            tiled 1 + the kind of its scales (halves for IQ4_NL, floats
 *            for IQ4_XS); no scales array
 *
 * Interleaved rows (il = 1; WT_F32, WT_BF16, WT_F16, and WT_Q8 with a
 * scale per row; rows a multiple of 4 and cols of WMAT_IL_COLS): the rows
 * (the codes, for WT_Q8; its scales stay as they are) go in blocks of four,
 * block b at the offset it would have row-major (4b * cols elements), and
 * inside it, for each WMAT_IL_COLS = 64 columns in turn, the 64 of row 4b,
 * then those of rows 4b + 1, 4b + 2 and 4b + 3. A kernel that walks the
 * four rows of a block together then reads one sequential stream, not four
 * streams cols apart, which on AMD's processors gets more bandwidth per
 * core (docs/performance.md, "Row layout by vendor"). Element (r, c) is
 * at wmat_row_at(r, cols, 1) + wmat_il_col(c). A WT_BF16 row also pairs its
 * columns: inside each 32, the 32-bit word j holds column j in its low half
 * and column j + 16 in its high half (wmat_pair_col), so that one 64-byte
 * load widens into columns j and j + 16 by a shift and a mask, the lanes
 * of the canonical dot, with no shuffle. Models set it when they own
 * their weights (copied or widened, not mapped) on AMD processors
 * (model_interleave, lib/model/model.h: on Intel's, four row-major streams
 * are faster).
 *
 * Interleaved in panels (il = 2; WT_BF16 and WT_F16 with more than
 * WMAT_PANEL_COLS columns, where the AVX-512 kernels run:
 * model_interleave): the columns are cut into panels of WMAT_PANEL_COLS
 * (the last one narrower, a multiple of WMAT_IL_COLS too), and the matrix
 * is its panels one after another, panel p at element p * WMAT_PANEL_COLS
 * * rows, each laid out as the interleaved rows above of a rows x
 * wmat_panel_cols(w, p) matrix (wmat_panel gives that view). A decode
 * kernel that walks every row of a panel before the next reads one
 * sequential stream and keeps the panel's inputs in L1: walking down_proj's
 * rows of 4864 columns whole, the weights streaming past evicted the
 * inputs, and it read at two thirds of the speed of the shorter rows
 * (docs/performance.md, "Long rows in panels").
 *
 * Tiled (tiled != 0; WT_Q8 and WT_Q4, and WT_Q50, WT_Q51 and WT_IQ4
 * always): the layout of the int8-activation kernels, rows in tiles of
 * 16, scales inside the tiles, defined in lib/kernels/qtile.h; scales is
 * NULL then. WT_BF16 tiled (tiled 1): the layout of the bf16-activation
 * kernels, rows in tiles of 64, defined in lib/kernels/btile.h.
 */
#ifndef WEIGHTS_H
#define WEIGHTS_H

#include <stdint.h>

/* WT_F32 .. WT_Q4 are also the type codes of a container's tensors (0 to
 * 3, lib/format/qfile.h); a container holds no WT_F16 and none of the
 * GGUF types after it (wt_from_gguf). */
enum wtype { WT_F32, WT_BF16, WT_Q8, WT_Q4, WT_F16, WT_Q4K, WT_Q5K, WT_Q6K, WT_Q50, WT_Q51,
	     WT_IQ4 };
#define WT_COUNT (WT_IQ4 + 1)

struct wmat {
	enum wtype type;
	int rows, cols;
	const void *data;
	const float *scales;  /* WT_Q8, WT_Q4 */
	int group_size;       /* WT_Q4; WT_Q8 when its scales are per group */
	int il;               /* 0, or rows interleaved (1), in column panels (2)
			       * (see above) */
	int tiled;            /* WT_Q8, WT_Q4: 0, or repacked into tiles for the
			       * int8-activation kernels (lib/kernels/qtile.h),
			       * 1 + the kind of their scales, as WT_Q50's,
			       * WT_Q51's and WT_IQ4's always are;
			       * WT_BF16: 0, or 1 for the bf16-activation ones
			       * (lib/kernels/btile.h) */
};

#define WMAT_IL_COLS 64
#define WMAT_PANEL_COLS 1024

/* Whether t is one of GGUF's types that the loader puts in their kernels'
 * tiles from the file's blocks (the K-quants, Q5_0, Q5_1, IQ4_NL and
 * IQ4_XS: the types after WT_F16), so made only from a file, never by
 * quantize. */
static inline int wt_from_gguf(enum wtype t)
{
	return t >= WT_Q4K;
}

/* Whether t is GGUF's Q5_0 or Q5_1, held in qtile's 5-bit tiles. */
static inline int wt_is_q5(enum wtype t)
{
	return t == WT_Q50 || t == WT_Q51;
}

/* Where row r starts (in elements), interleaved or not. */
static inline size_t wmat_row_at(int r, int cols, int il)
{
	if (!il)
		return (size_t)r * (size_t)cols;
	return (size_t)(r & ~3) * (size_t)cols + (size_t)(r & 3) * WMAT_IL_COLS;
}

/* Where column c of an interleaved row is, from the row's start. */
static inline size_t wmat_il_col(int c)
{
	return 4 * (size_t)(c & ~(WMAT_IL_COLS - 1)) + (size_t)(c & (WMAT_IL_COLS - 1));
}

/* Where column c of an interleaved WT_BF16 row is stored among its 32
 * (see above): word c % 16, its low half for c % 32 < 16. */
static inline int wmat_pair_col(int c)
{
	return (c & ~31) | (c & 15) << 1 | (c >> 4 & 1);
}

/* The columns of panel p of w (il 2), and where it starts, in elements
 * from w->data. */
static inline int wmat_panel_cols(const struct wmat *w, int p)
{
	int c0 = p * WMAT_PANEL_COLS;
	return w->cols - c0 < WMAT_PANEL_COLS ? w->cols - c0 : WMAT_PANEL_COLS;
}

static inline size_t wmat_panel_at(const struct wmat *w, int p)
{
	return (size_t)p * WMAT_PANEL_COLS * (size_t)w->rows;
}

/* Element (r, c) of w, in elements from w->data. */
static inline size_t wmat_at(const struct wmat *w, int r, int c)
{
	if (!w->il)
		return wmat_row_at(r, w->cols, 0) + (size_t)c;
	size_t at = 0;
	int cols = w->cols;
	if (w->il == 2) {
		int p = c / WMAT_PANEL_COLS;
		at = wmat_panel_at(w, p);
		cols = wmat_panel_cols(w, p);
		c -= p * WMAT_PANEL_COLS;
	}
	return at + wmat_row_at(r, cols, 1) +
	       wmat_il_col(w->type == WT_BF16 ? wmat_pair_col(c) : c);
}

/* Panel p of w (il 2) as a matrix of its own, interleaved (il 1); es: the
 * bytes of an element. */
static inline struct wmat wmat_panel(const struct wmat *w, int p, size_t es)
{
	struct wmat v = *w;
	v.cols = wmat_panel_cols(w, p);
	v.data = (const char *)w->data + es * wmat_panel_at(w, p);
	v.il = 1;
	return v;
}

/* Whether w can be interleaved: a float type or int8 with a scale per row,
 * rows a multiple of 4, cols of WMAT_IL_COLS. */
static inline int wmat_can_interleave(const struct wmat *w)
{
	return (w->type == WT_F32 || w->type == WT_BF16 || w->type == WT_F16 ||
		(w->type == WT_Q8 && !w->group_size)) &&
	       w->rows % 4 == 0 && w->cols % WMAT_IL_COLS == 0;
}

/* Whether w (wmat_can_interleave) can be interleaved in panels: a 16-bit
 * float type with more than one panel's columns. (Float32 matrices,
 * `forward --f32`, decoded slower in panels in the whole model, though
 * faster alone: docs/performance.md.) */
static inline int wmat_can_panel(const struct wmat *w)
{
	return (w->type == WT_BF16 || w->type == WT_F16) && w->cols > WMAT_PANEL_COLS;
}

/* Whether w stores integers (WT_Q8, WT_Q4, the K-quants, Q5_0, Q5_1,
 * WT_IQ4): the matrices that int8 activations multiply. */
static inline int wmat_is_int(const struct wmat *w)
{
	return w->type == WT_Q8 || w->type == WT_Q4 || wt_from_gguf(w->type);
}

/* Whether w is an int8 or int4 matrix, the ones qtile (lib/kernels/qtile.h)
 * repacks for int8 activations; the K-quants, Q5_0, Q5_1 and the IQ4 types
 * are tiled from the start and run either way. */
static inline int wmat_qtileable(const struct wmat *w)
{
	return w->type == WT_Q8 || w->type == WT_Q4;
}

/* Whether w's scales are per group of group_size weights (WT_Q4, and WT_Q8
 * with a group_size), not per row. */
static inline int wmat_grouped(const struct wmat *w)
{
	return w->type == WT_Q4 || (w->type == WT_Q8 && w->group_size > 0);
}

#endif
