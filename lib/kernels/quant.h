/* quant: the int8 and int4 weight schemes and the kernels that compute on
 * them directly.
 *
 * Schemes (a `struct wmat` of type WT_Q8 or WT_Q4, lib/kernels/weights.h):
 *
 *   int8  symmetric, one float scale per output row:
 *           scale = max|row| / 127, q = round(w / scale) (half away from
 *           zero), clamped to [-127, 127]; w ~ scale * q. An all-zero row has
 *           scale 0 and codes 0. This is exactly the `int8` of
 *           tests/golden/ppl-shakespeare-tiny.json.
 *
 *   int4  group-wise along the input dimension (cols): every group of
 *         group_size consecutive weights of a row has one float scale and
 *         codes in the full range [-8, 7]; w ~ scale * q. With m the
 *         group's weight of largest magnitude (the first on ties, with its
 *         sign), scale = -m / 8 rounded to the nearest IEEE half (so
 *         that it takes 16 bits in the tiles, lib/kernels/qtile.h: 4.5
 *         bits a weight, as GGUF's Q4_0; beyond the halves' range it stays
 *         as it is): m is -8 scales, the extreme weights are kept to the
 *         half's precision, and the step is 7/8 of the max/7 baseline's;
 *         q = round(w / scale) (half away from zero) clamped to [-8, 7]
 *         (only a weight of m's magnitude and the other sign clamps, from
 *         8 to 7). The scale may be negative. group_size is a
 *         multiple of Q4_BLOCK and divides cols. (q4_quantize_row_rtn is
 *         the golden's `int4g32` baseline: scale = max|group| / 7, codes in
 *         [-7, 7]; ppl reports both.) A search for the scale minimising
 *         each group's squared error was tried and measured: it cuts the
 *         weight error but raised perplexity above the baseline
 *         (docs/quantization.md).
 *
 * int4 packing (the contract of WT_Q4 data): row r takes cols / 2 bytes at
 * data + r * cols / 2. The row is cut into blocks of Q4_BLOCK = 32 weights;
 * block b (weights 32b .. 32b+31 of the row) is the 16 bytes at 16b; byte j
 * of the block holds (q[32b + j] + 8) in its low nibble and
 * (q[32b + 16 + j] + 8) in its high nibble. So one 16-byte load gives the
 * block's first half from the low nibbles and its second half from the high
 * nibbles, in order. Scales: float scales[rows * (cols / group_size)],
 * row-major, scales[r * (cols / group_size) + g] for weights
 * g * group_size .. (g + 1) * group_size - 1.
 *
 * Kernels: y = W x for a range of output rows and T activation vectors, so
 * a thread pool can split by rows and get the same bits for any split. They
 * read the integer codes and widen them in registers; nothing is
 * dequantized into memory. A scalar reference and AVX2 / AVX-512 versions
 * exist, in the kernel table of the caller's level (lib/kernels/kernels.h). All follow one
 * canonical order (the one of lib/kernels/kernels.h's dot), so they are bitwise
 * equal: 16 partial sums start at +0;
 *   int8: weight c goes into s[c % 16] = fmaf(q[c], x[c], s), in increasing
 *         c; the sums are folded in halves (s[j] += s[j + w], w = 8, 4, 2,
 *         1) and s[0] times the row's scale is the result;
 *   int4: per group, g[c % 16] = fmaf(q[c], x[c], g) over the group's
 *         weights in increasing c (from fresh zeros), then
 *         s[j] = fmaf(g[j], scale, s[j]) for each lane; after the last group
 *         the same fold gives the result;
 *   int8 in groups (WT_Q8 with a group_size: GGUF's Q8_0, repacked at
 *         load, lib/kernels/weights.h): int4's order on the int8 codes.
 *
 * int8 activations (the default for these weights, lib/model/forward.h):
 * the activation vector is itself quantized, symmetric, in blocks of
 * Q8A_BLOCK = 32 values with one float scale each (scale = max|block| /
 * 127, codes as int8 weights), and the products run on integers in the
 * order of lib/kernels/qtile.h, on matrices repacked for it.
 */
#ifndef QUANT_H
#define QUANT_H

#include <stddef.h>
#include <stdint.h>
#include "core/cpu.h"
#include "core/err.h"
#include "kernels/weights.h"

#define Q4_BLOCK 32            /* weights per packed int4 block (16 bytes) */
#define Q4_DEFAULT_GROUP 32
#define Q8A_BLOCK 32           /* activations per int8-activation scale */

/* ---- quantization (float32 in, codes and scales out) ---- */

/* int8: quantizes one row of n weights into q[n] and *scale. */
void q8_quantize_row(const float *w, int n, int8_t *q, float *scale);

/* int4: quantizes one row of n weights (n a multiple of group, group a
 * multiple of Q4_BLOCK) into packed q[n / 2] and scales[n / group]. */
void q4_quantize_row(const float *w, int n, int group, uint8_t *q, float *scales);

/* The golden int4 baseline (round to nearest, scale = max|group| / 7,
 * codes in [-7, 7]) in the same packing: for comparison in ppl. */
void q4_quantize_row_rtn(const float *w, int n, int group, uint8_t *q, float *scales);

/* Quantizes a whole WT_F32 or WT_BF16 matrix src into `to` (WT_Q8 with a
 * scale per row when group is 0, or per group, each group quantized on its
 * own as GGUF's Q8_0 is; WT_Q4 with group, rtn picking
 * q4_quantize_row_rtn): data gets
 * q8_data_bytes / q4_data_bytes, scales rows / q4_nscales floats. Works a
 * row at a time (scratch on the stack: cols floats). */
/* Refuses (-1, e "tensor 'NAME': row R, column C is nan: ...") a row of a
 * matrix to be quantized that holds a NaN or an infinity: the block's
 * scale would skip it and its code hide it, where the float model shows
 * it (forward warns of it). Returns 0 for a finite row. */
int quant_row_finite(const char *name, long r, const float *row, int cols, struct err *e);

void quant_matrix(const struct wmat *src, enum wtype to, int group, int rtn,
		  void *data, float *scales);

/* ||src - dequant(q)|| / ||src|| over the whole matrix (0 for a zero src):
 * the report's relative weight error. */
double quant_rel_error(const struct wmat *src, const struct wmat *q);

/* Checks that a matrix of cols columns can use int4 with this group size;
 * on failure fills e with the reason ("group size 48 is not a multiple of
 * 32", "group size 64 does not divide 96 columns"). */
int q4_check_shape(int cols, int group, struct err *e);

/* Bytes of codes and number of scales of a rows x cols matrix. */
size_t q8_data_bytes(int rows, int cols);
size_t q4_data_bytes(int rows, int cols);
size_t q4_nscales(int rows, int cols, int group);

/* Bytes of a matrix of any type (lib/kernels/weights.h), scales included: what a
 * pass over it reads. */
size_t wmat_bytes(const struct wmat *w);

/* The part of that at w->data: an untiled int8 or int4 matrix's codes (its
 * scales are the rest), else all of it. */
size_t wmat_data_bytes(const struct wmat *w);

/* The code of weight (r, c) of a WT_Q4 matrix, in [-8, 7]. */
static inline int q4_code(const struct wmat *w, int r, int c)
{
	const uint8_t *row = (const uint8_t *)w->data + (size_t)r * (size_t)w->cols / 2;
	int b = c / Q4_BLOCK, j = c % Q4_BLOCK;
	uint8_t byte = row[b * (Q4_BLOCK / 2) + (j % (Q4_BLOCK / 2))];
	return (j < Q4_BLOCK / 2 ? (byte & 15) : (byte >> 4)) - 8;
}

/* Weight (r, c)'s code and scale in a tiled matrix (lib/kernels/qtile.h). */
int qtile_code(const struct wmat *w, int r, int c);
float qtile_scale(const struct wmat *w, int r, int c);

/* The code of weight (r, c) of a WT_Q8 or WT_Q4 matrix. */
static inline int quant_code(const struct wmat *w, int r, int c)
{
	if (w->tiled)
		return qtile_code(w, r, c);
	if (w->type == WT_Q4)
		return q4_code(w, r, c);
	return ((const int8_t *)w->data)[wmat_at(w, r, c)];
}

/* The scale of weight (r, c) of a WT_Q8 or WT_Q4 matrix. */
static inline float quant_scale(const struct wmat *w, int r, int c)
{
	if (w->tiled)
		return qtile_scale(w, r, c);
	if (!wmat_grouped(w))
		return w->scales[r];
	return w->scales[(size_t)r * (size_t)(w->cols / w->group_size) + (size_t)(c / w->group_size)];
}

/* Dequantizes columns [c0, c1) of row r of a WT_Q8 or WT_Q4 matrix into
 * out[c1 - c0] (c0, c1 multiples of Q4_BLOCK for WT_Q4, or c1 == cols).
 * Used for the embedding lookup: w = scale * q,
 * computed in float32 exactly as the simulated-quantization reference does. */
void quant_dequant_row(const struct wmat *w, int r, int c0, int c1, float *out);

/* ---- kernels ---- */

/* The products: y[t * ldy + r] = sum_c W[r][c] x[t * ldx + c] for r in
 * [r0, r1) and t < T, w WT_Q8 (either kind of scales) or WT_Q4, are the
 * entries mm[WT_Q8 or WT_Q4][KA_F32] of each level's kernel table
 * (lib/kernels/kernels.h), reached through kern_matmul
 * (lib/kernels/matmul.h). Each output is computed in the same order
 * whatever T, the row range, the split of rows into calls or the SIMD
 * level, so chunking a prompt, threading by rows or capping the level
 * never changes a bit. With T > 1 each block of four rows is read from
 * memory once and reused from cache for every t. */

/* int8 activations: a vector quantized in blocks of Q8A_BLOCK: codes
 * q[n_pad] (zero beyond n), scales and code sums, one per block, and the
 * code sums of each half block, with n_pad = n rounded up to Q8A_BLOCK
 * (q8a_padded). A block with a NaN has the scale NaN and codes 0, so that
 * the NaN reaches the products' outputs as it would with float
 * activations (a NaN weight of a norm, say) rather than vanish in the
 * rounding. */
struct q8act {
	int n;           /* logical length */
	int8_t *q;
	float *scales;
	int32_t *sums;   /* the sum of each block's codes */
	int32_t *hsums;  /* the sum of each half block's (Q8A_BLOCK / 2 codes):
			  * sums[b] = hsums[2b] + hsums[2b + 1] */
};

int q8a_padded(int n);

/* T vectors of n values, in one allocation (free() it): a[t]'s buffers
 * follow the array. NULL when out of memory. */
struct q8act *q8a_alloc(int n, int T);

/* Quantizing: k->q8a_quantize(x, n, a) (struct kernels,
 * lib/kernels/kernels.h) quantizes x[n] into a (allocated for at least n),
 * its codes, scales and sums; the same bits at every level. */

#endif
