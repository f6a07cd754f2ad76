/* gguf: a validating, zero-copy reader for GGUF files (llama.cpp's format),
 * versions 2 and 3, little-endian.
 *
 * Layout (all integers little-endian):
 *   u32 magic "GGUF", u32 version, u64 tensor count, u64 key/value count;
 *   the key/value pairs: a string key (u64 length, bytes), a u32 value
 *     type, the value (a scalar; a string; or an array: u32 element type,
 *     u64 count, the elements);
 *   the tensor infos: a string name, u32 n_dims, u64 ne[n_dims] (ggml's
 *     order: ne[0] is the row length, the fastest-moving index), u32 type,
 *     u64 offset from the start of the data section;
 *   zero padding to the alignment (general.alignment, default 32), then the
 *     data section: each tensor at an offset that is a multiple of the
 *     alignment.
 * Version 3 only added big-endian files (their version reads as 3 << 24
 * here, and is refused as such); version 1 had 32-bit counts and is refused.
 *
 * Nothing is trusted before it is checked: every length against the bytes
 * left, every value type, bools 0 or 1, keys (non-empty, valid UTF-8,
 * unique), general.alignment (a u32 power of two), every tensor (name
 * non-empty, under 64 bytes, valid UTF-8, unique; 1 to 4 dimensions, each
 * at least 1, the element count without 63-bit overflow; a known type whose
 * block size divides ne[0]; offset aligned), and the tensors together: in
 * offset order each begins exactly where the previous one ended, rounded up
 * to the alignment (so no overlap and no hole), the first at 0, and the
 * file ends at the last one's end or at that end padded to the alignment.
 * Arrays of arrays are refused (llama.cpp writes and reads none).
 * Tensor data is never read by gguf_parse: views point into the buffer.
 *
 * Errors name the file, then the key or the tensor:
 *   "m.gguf: key 'general.alignment': 48 is not a power of two",
 *   "m.gguf: tensor 'blk.0.attn_q.weight': offset 96 overlaps the previous
 *    tensor (ends at 128)".
 */
#ifndef GGUF_H
#define GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "core/mapfile.h"
#include "kernels/kquant.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NAME 64   /* a tensor name is shorter than this (ggml's limit) */

/* Metadata value types, as numbered in the file. */
enum gguf_vtype {
	GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32,
	GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64,
	GGUF_NVTYPES
};

/* Tensor types (ggml_type), as numbered in the file; the gaps are types
 * ggml no longer has. The IQ types but IQ4_NL and IQ4_XS are named but
 * not read (their sizes are not checked here), so a file with one is
 * refused by name. */
enum gguf_ttype {
	GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3,
	GGML_Q5_0 = 6, GGML_Q5_1 = 7, GGML_Q8_0 = 8, GGML_Q8_1 = 9,
	GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12, GGML_Q5_K = 13,
	GGML_Q6_K = 14, GGML_Q8_K = 15, GGML_IQ4_NL = 20, GGML_IQ4_XS = 23,
	GGML_I8 = 24, GGML_I16 = 25, GGML_I32 = 26, GGML_I64 = 27, GGML_F64 = 28,
	GGML_BF16 = 30,
	GGML_NTYPES = 40
};

struct gguf_kv {
	char *key;                 /* NUL-terminated, owned */
	enum gguf_vtype type;
	/* scalars (integers, bools, floats widened exactly) */
	uint64_t u;                /* unsigned types and bools */
	int64_t i;                 /* signed types (and unsigned ones that fit) */
	double f;                  /* F32, F64 */
	/* STRING: a view, not NUL-terminated */
	const char *s;
	uint64_t slen;
	/* ARRAY: element type, count, and a view of the first element */
	enum gguf_vtype atype;
	uint64_t n;
	const unsigned char *arr;
};

struct gguf_tensor {
	char *name;                /* NUL-terminated, owned */
	enum gguf_ttype type;
	int ndim;
	int64_t ne[GGUF_MAX_DIMS]; /* ggml order; unused dimensions are 1 */
	uint64_t nelem;
	uint64_t offset;           /* from the start of the data section */
	uint64_t bytes;
	const void *data;          /* view: data_offset + offset */
};

struct gguf_file {
	struct mapfile map;        /* gguf_open's mapping (empty after gguf_parse) */
	const unsigned char *base;
	size_t size;
	uint32_t version;
	uint64_t alignment;
	uint64_t data_offset;      /* where the data section starts */
	int nkv;
	struct gguf_kv *kv;        /* in file order */
	int ntensors;
	struct gguf_tensor *t;     /* in file order */
};

/* Whether path is to be read as GGUF: its name ends in ".gguf" (so that a
 * damaged one gets this reader's message, not another's), or the file
 * starts with the GGUF magic. */
bool gguf_sniff(const char *path);

/* Maps and validates path. On failure fills e with "path: problem" and
 * leaves nothing to free; on success the caller frees with gguf_close. */
int gguf_open(struct gguf_file *f, const char *path, struct err *e);

/* Validates an in-memory image; views point into buf, which must outlive
 * f. name is used in messages. Free with gguf_close. */
int gguf_parse(struct gguf_file *f, const unsigned char *buf, size_t size,
	       const char *name, struct err *e);

void gguf_close(struct gguf_file *f);

/* The key/value pair or tensor with this name, or NULL. */
const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key);
const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name);

/* "UINT32", "STRING", ... ("?" when out of range). */
const char *gguf_vtype_name(enum gguf_vtype t);
/* "F32", "Q4_K", ... (NULL for a number that names no type). */
const char *gguf_ttype_name(enum gguf_ttype t);
/* Elements per block and bytes per block (0 when the type is not read). */
uint64_t gguf_ttype_block(enum gguf_ttype t);
uint64_t gguf_ttype_size(enum gguf_ttype t);

/* Walks a STRING array: *pos starts at kv->arr; each call returns the next
 * string's bytes (not NUL-terminated) and length and advances *pos. The
 * file was validated, so the caller only counts to kv->n. */
const char *gguf_arr_str(const unsigned char **pos, uint64_t *len);

/* Element i of a numeric array, widened (integers exactly; floats as
 * doubles). */
int64_t gguf_arr_int(const struct gguf_kv *kv, uint64_t i);
double gguf_arr_float(const struct gguf_kv *kv, uint64_t i);

/* Typed lookups. Each returns 0 and sets *out; 1 when the key is absent
 * (nothing set); -1 with "name: key 'k': ..." in e when it is present with
 * another type or a value out of range. Integers accept any integer type;
 * floats F32 or F64. */
int gguf_get_int(const struct gguf_file *f, const char *key, int64_t lo, int64_t hi,
		 int64_t *out, const char *name, struct err *e);
int gguf_get_float(const struct gguf_file *f, const char *key, double *out,
		   const char *name, struct err *e);
int gguf_get_str(const struct gguf_file *f, const char *key, const char **s,
		 uint64_t *len, const char *name, struct err *e);
int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out,
		  const char *name, struct err *e);

/* The value as text for a person, into buf[cap]: numbers, strings (quoted
 * as JSON, cut at 60 bytes with "..."), arrays summarised as
 * "[151936 x STRING]" with their first elements. */
void gguf_kv_text(const struct gguf_kv *kv, char *buf, size_t cap);

/* ---- values ---- */

/* Dequantizes n elements (a whole number of blocks) of type t at src into
 * dst, exactly as ggml's reference dequantizers and llama.cpp's gguf-py do
 * (float32 arithmetic in their order; see gguf_quant.c). 0, or -1 when t
 * cannot be dequantized (Q8_1, Q8_K, the IQ and TQ types but IQ4_NL and
 * IQ4_XS, the integer types). */
int gguf_dequant(enum gguf_ttype t, const void *src, uint64_t n, float *dst);

/* When every one of the n floats of v is a bf16 exactly (its low 16 bits
 * zero), rewrites v in place as n bf16 values (uint16_t, from v's start)
 * and returns true; otherwise returns false with v unchanged. */
bool gguf_narrow_bf16(float *v, uint64_t n);

/* Whether gguf_dequant reads type t. */
bool gguf_can_dequant(enum gguf_ttype t);

/* One Q5_0 or Q5_1 block (type t): its 32 codes u (0..31) and its halves
 * d and m (0 for Q5_0); gguf_dequant's values are d * (u - 16) and
 * fl(d * u) + m. */
void gguf_q5_block(enum gguf_ttype t, const void *block, uint8_t u[32], uint16_t *d,
		   uint16_t *m);

/* Group k (values 32k .. 32k + 31) of a Q8_0, IQ4_NL or IQ4_XS tensor's
 * data as int8 codes q and, returned, a float scale whose products
 * scale * q are gguf_dequant's values: Q8_0's codes and half d; IQ4_NL's
 * nibbles through the format's table of 16 levels, and its d; IQ4_XS's
 * the same levels, and its super-block's d times the group's 6-bit scale
 * minus 32 (a float exactly: an 11-bit significand times at most 32). */
float gguf_int8_group(enum gguf_ttype t, const void *data, uint64_t k, int8_t q[32]);

/* The same group of an IQ4_NL or IQ4_XS tensor as its 16 nibbles' indices
 * u (0..15; the codes are lib/kernels/qtile.h's qtile_iq4_level[u]) and,
 * returned, the same scale. */
float gguf_iq4_group(enum gguf_ttype t, const void *data, uint64_t k, uint8_t u[32]);

/* The K-quants (Q3_K, Q4_K, Q5_K, Q6_K): one super-block at block decoded
 * into k (codes unsigned, lib/kernels/kquant.h); a Q3_K one as the Q6_K
 * super-block of the same values (gguf_quant.c). */
void gguf_kdecode(enum gguf_ttype t, const void *block, struct kq_block *k);

/* The matrix type a K-quant (but Q2_K), Q5_0, Q5_1, IQ4_NL or IQ4_XS
 * tensor is put into tiles as (lib/kernels/kquant.h, qtile.h): Q3_K as
 * WT_Q6K, both IQ4 types as WT_IQ4. */
enum wtype gguf_tile_wtype(enum gguf_ttype t);

/* The first super-block of n values of K-quant (or IQ4_XS) type t at src
 * whose scale d (or dmin) is Inf or NaN, or -1 when none is (and for other
 * types). */
int64_t gguf_bad_scale(enum gguf_ttype t, const void *src, uint64_t n);

/* Quantizes n float32 values (a whole number of blocks) into type t at dst,
 * exactly as ggml's reference quantizers (quantize_row_*_ref: no
 * importance matrix) and conversions do, so that a file we write holds the
 * bytes llama.cpp's llama-quantize would: F32 (copied), F16 and BF16
 * (rounded to nearest even), Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K.
 * 0, or -1 for another type. */
int gguf_quant(enum gguf_ttype t, const float *src, uint64_t n, void *dst);

#endif
