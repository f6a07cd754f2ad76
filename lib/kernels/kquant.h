/* kquant: GGUF's K-quants (Q4_K, Q5_K, Q6_K) held as integer codes,
 * repacked at load into tiles the kernels read, and the kernels on them.
 *
 * A K-quant row is cut into super-blocks of KQ_SB = 256 weights. Each has
 * float scales d (and dmin, Q4_K and Q5_K), and per sub-block an integer
 * scale sc (and min m): Q4_K and Q5_K have 8 sub-blocks of 32 with sc, m in
 * 0..63 and codes q in 0..15 (Q4_K) or 0..31 (Q5_K); Q6_K has 16 sub-blocks
 * of 16 with sc in -128..127 and codes q in 0..63. The weight is ggml's
 * dequantized value, in float32 with each operation rounded on its own:
 *   Q4_K, Q5_K  w = fl(fl(ds * q) - dm), ds = fl(d * sc), dm = fl(dmin * m)
 *   Q6_K        w = fl(ds * (q - 32)),   ds = fl(d * sc)
 * (struct kq_block holds one super-block so; kq_block_dequant is this
 * definition, which lib/format/gguf_quant.c's dequantizer uses too.)
 *
 * Layout of a WT_Q4K / WT_Q5K / WT_Q6K matrix (struct wmat: data only, no
 * scales, il 0): rows are grouped in tiles of KQ_TILE = 16 (the last one
 * padded with zero rows); for tile t and super-block s (cols / 256 of them)
 * one record of kq_rec_bytes(type) bytes at data + (t * cols / 256 + s) *
 * kq_rec_bytes, so a tile's records are one sequential stream. "lane" is the
 * row's index in its tile. A record, every part 64-byte aligned:
 *   float d[16]                      per lane
 *   float dmin[16]                   Q4_K, Q5_K only
 *   u8 sc[8][16], u8 m[8][16]        Q4_K, Q5_K: [sub-block][lane]
 *   i8 sc[16][16]                    Q6_K: [sub-block][lane]
 *   u8 nib[8][4][64]                 the low 4 bits of each code: for block
 *                                    k (columns 32k .. 32k + 31 of the
 *                                    super-block) and vector j < 4, byte
 *                                    4 * lane + i holds column 4j + i in its
 *                                    low nibble and column 16 + 4j + i in its
 *                                    high nibble
 *   u8 high[8][bits - 4][64]         the bits above the nibble (Q5_K: one
 *                                    vector a block, Q6_K: two), high[k]
 *                                    block k's, in the layout of
 *                                    lib/kernels/highbits.h
 * So one 64-byte vector of nib is 16 lanes (rows) x 4 columns for each
 * nibble, the operand of one vpdpbusd per nibble, and a vector of high
 * bits adds the rest of 8 (Q5_K) or 4 (Q6_K) such vectors. Bytes per weight over the file's:
 * Q4_K 2432 / 2304 per 16 x 256, Q5_K 2944 / 2816, Q6_K 3392 / 3360.
 *
 * Float activations (the exact mode): y[r] is the canonical dot
 * (lib/kernels/kernels.h) of the dequantized row and x: the same bits as
 * the float32 matrix of the dequantized values through the float32 product
 * (mm[WT_F32][KA_F32] of the same level's table). A block
 * of rows is dequantized into a buffer on the stack and multiplied there;
 * no float copy of the matrix is kept.
 *
 * int8 activations (struct q8act, lib/kernels/quant.h: codes a[c], a float
 * scale as[k] per block k of 32 columns): the canonical order, followed by
 * the scalar reference and the SIMD kernels alike, for each row: acc = +0;
 * for each block k of 32 columns in increasing order (super-block s = k / 8,
 * sub-block index in it kk = k % 8):
 *   Q4_K, Q5_K: isum = sum of q[c] * a[c], bsum = sum of a[c] over the
 *     block (exact integers); acc = fmaf((float)isum, fl(ds * as[k]), acc);
 *     acc = fmaf(-(float)bsum, fl(dm * as[k]), acc), with ds, dm of
 *     sub-block kk;
 *   Q6_K: for each half h = 0, 1 (16 columns, sub-block 2 kk + h): isum =
 *     sum of q[c] * a[c] - 32 * sum of a[c] over the half (exact);
 *     acc = fmaf((float)isum, fl(ds * as[k]), acc);
 * y[r] = acc. Every |isum| is below 2^24, so (float)isum is exact.
 */
#ifndef KQUANT_H
#define KQUANT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "core/cpu.h"
#include "kernels/highbits.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/weights.h"

#define KQ_SB 256     /* weights per super-block */
#define KQ_TILE 16    /* rows per tile */
/* The widest row the kernels take (their scratch is on the stack); loaders
 * refuse wider ones. */
#define KQ_MAX_COLS 32768

/* One super-block of one row, decoded. */
struct kq_block {
	float d, dmin;    /* dmin: Q4_K, Q5_K */
	int sc[16];       /* sub-block scales: 8 (Q4_K, Q5_K) or 16 (Q6_K) */
	int m[8];         /* sub-block mins: Q4_K, Q5_K */
	uint8_t q[256];   /* codes, unsigned: 0..15, 0..31 or 0..63 */
};

/* Whether t is a K-quant type (WT_Q4K, WT_Q5K, WT_Q6K). */
static inline int kq_is(enum wtype t)
{
	return t == WT_Q4K || t == WT_Q5K || t == WT_Q6K;
}

/* Bits per code: 4, 5 or 6. */
int kq_bits(enum wtype t);

/* Bytes of one record, and of a rows x cols matrix (cols a multiple of
 * KQ_SB). */
size_t kq_rec_bytes(enum wtype t);
size_t kq_bytes(enum wtype t, int rows, int cols);

/* The 256 weights of b, by the definition above. */
void kq_block_dequant(enum wtype t, const struct kq_block *b, float *y);

/* Writes super-block s of row r of w into data (w->data's buffer, writable,
 * kq_bytes long and zeroed first, so that padding rows are zero). */
void kq_put(const struct wmat *w, void *data, int r, int s, const struct kq_block *b);

/* Reads super-block s of row r of w back. */
void kq_get(const struct wmat *w, int r, int s, struct kq_block *b);

/* out[0..cols) = row r of w, dequantized. */
void kq_dequant_row(const struct wmat *w, int r, float *out);

/* The products are entries of each level's kernel table
 * (lib/kernels/kernels.h), reached through kern_matmul
 * (lib/kernels/matmul.h): mm[type][KA_F32], the exact mode, on the
 * level's float32 product; mm[type][KA_Q8], int8 activations, in the
 * order above: the VNNI kernel where the level is CPU_AVX512 and
 * kern_has_vnni(), the AVX2 one where it is at least CPU_AVX2, else the
 * scalar reference. The activations' code sums are the q8act's: sums[k]
 * is bsum, hsums[2k + h] Q6_K's sum over half h. */

/* ---- internal to lib/kernels: a record's parts, the kernels ---- */

#define KQ_OFF_D 0
#define KQ_OFF_DMIN 64
#define KQ_OFF_M 256
#define KQ_NIB_BYTES 2048     /* 8 blocks x 4 vectors x 64 bytes */
#define KQ_HIGH_BYTES 512     /* 8 blocks x 64 bytes, per high bit */

static inline size_t kq_off_sc(enum wtype t)
{
	return t == WT_Q6K ? 64 : 128;
}

static inline size_t kq_off_nib(enum wtype t)
{
	return t == WT_Q6K ? 320 : 384;
}

static inline size_t kq_off_high(enum wtype t)
{
	return kq_off_nib(t) + KQ_NIB_BYTES;
}

/* The record of tile `tile`, super-block s. */
static inline const unsigned char *kq_rec(const struct wmat *w, int tile, int s)
{
	int nsb = w->cols / KQ_SB;
	return (const unsigned char *)w->data +
	       ((size_t)tile * (size_t)nsb + (size_t)s) * kq_rec_bytes(w->type);
}

/* Four activation codes as one 32-bit word (the broadcast operand). */
static inline int kq_group4(const int8_t *q)
{
	int v;
	memcpy(&v, q, 4);
	return v;
}

/* The table's entries, by level (kquant.c, kquant_avx2.c, kquant_vnni.c);
 * the exact mode's (kq_mm_*) serve Q5_0 and Q5_1 too. */
kern_mm_fn kq_mm_scalar, kq_mm_avx2, kq_mm_avx512;
kern_mm_fn kq_q8a_scalar, kq_q8a_avx2, kq_q8a_vnni;

#endif
