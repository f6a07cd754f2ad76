/* safetensors: a validating, zero-copy reader for .safetensors files.
 *
 * Layout: 8-byte little-endian header length N, N bytes of JSON, then the
 * data section. The JSON object maps tensor names to
 * {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]} with offsets
 * relative to the start of the data section, plus an optional
 * "__metadata__" object of string values.
 *
 * Nothing is trusted before it is checked: the first bytes (a length that
 * cannot be right, with no '{' after it: "not a safetensors file"), the header length
 * against the file size and the reference reader's limit, the JSON
 * (strict RFC 8259, lib/core/jsonutil.h; shape and offsets are integers
 * as written, "24.0" is refused), every key's type, every dtype, every dimension
 * (non-negative, product without 64-bit overflow), every offset pair
 * (ordered, inside the data section, length == product x dtype bits / 8), the
 * tensors together (no overlaps, no holes, the data section fully covered),
 * names (valid UTF-8, no duplicates). Tensor data is never read by
 * st_open: views point into the mapping.
 *
 * Views are not aligned beyond what the file gives: data_offset is 8 + N,
 * and writers usually (not always) pad N to a multiple of 8. Readers of
 * multi-byte elements use memcpy or check the alignment themselves.
 *
 * Errors name the file, then the tensor when there is one:
 *   "m.safetensors: tensor 'a': data_offsets: [8, 4] are reversed".
 */
#ifndef SAFETENSORS_H
#define SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "core/err.h"
#include "core/mapfile.h"

/* Every dtype of the format (HuggingFace safetensors 0.6): F8_E4M3 is
 * OCP's E4M3FN, F8_E8M0 an exponent alone (MX scales), F6_E2M3, F6_E3M2
 * and F4 (E2M1) the packed MX element types, C64 a pair of F32. */
enum st_dtype {
	ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8,
	ST_BOOL, ST_U64, ST_U32, ST_U16, ST_F8_E4M3, ST_F8_E5M2, ST_F8_E8M0,
	ST_F6_E2M3, ST_F6_E3M2, ST_F4, ST_C64, ST_NDTYPES
};

#define ST_MAX_DIMS 8

/* The largest header the reference reader (HuggingFace's safetensors)
 * accepts; a larger one is refused here too. */
#define ST_MAX_HEADER 100000000

struct st_tensor {
	char *name;            /* NUL-terminated, valid UTF-8 */
	enum st_dtype dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	uint64_t nelem;        /* product of shape (1 for a scalar) */
	uint64_t begin, end;   /* byte offsets relative to the data section */
	const void *data;      /* view into the mapping: data_offset + begin */
};

struct st_file {
	struct mapfile map;
	uint64_t header_len;   /* N */
	uint64_t data_offset;  /* 8 + N */
	int ntensors;
	struct st_tensor *tensors;  /* sorted by data offset */
	int nmeta;
	char **meta_keys, **meta_vals;  /* __metadata__ */
};

/* Maps and validates path. On failure fills e with "path: problem" and
 * leaves nothing to free. On success the caller frees with st_close. */
int st_open(struct st_file *f, const char *path, struct err *e);

/* Validates an in-memory image (used by st_open and by the fuzzer); the
 * result's views point into buf, which must outlive it. name is used in
 * messages. */
int st_parse(struct st_file *f, const unsigned char *buf, size_t size,
	     const char *name, struct err *e);

void st_close(struct st_file *f);

/* The tensor with this name, or NULL. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);

/* "BF16" etc. as in the header ("?" when t is out of range). */
const char *st_dtype_name(enum st_dtype t);

/* Bits per element: 4 (F4), 6 (F6_*), else a multiple of 8; 0 when t is
 * out of range. Sub-byte elements are packed, so a tensor of them must
 * fill whole bytes (elements x bits a multiple of 8), as the reference
 * reader requires. */
unsigned st_dtype_bits(enum st_dtype t);

/* Bytes per element, rounded up (1 for the packed F4 and F6_*): the
 * alignment a reader of whole elements needs; 0 when t is out of range. */
size_t st_dtype_size(enum st_dtype t);

/* The dtype named s ("BF16"), 0; or -1 when s names none. */
int st_dtype_parse(const char *s, enum st_dtype *t);

#endif
