/* qfile: the quantized model container (.q8, .q4): reader and writer.
 *
 * One self-describing, versioned, mmap-able file holds everything a model
 * directory holds: config.json, generation_config.json and tokenizer.json
 * are embedded verbatim (so `forward model.q8` and `tok --tokenizer model.q8`
 * need no other file, and the container cannot drift from the tokenizer it
 * was made with; the 7 MB tokenizer is ~1.4% of an int8 Qwen2.5-0.5B), then
 * every tensor, quantized or not, with its scales.
 *
 * Byte layout (all integers little-endian; offsets absolute from byte 0):
 *
 *   header, 128 bytes
 *     0   8  magic "QWPQUANT"
 *     8   4  u32 version (QF_VERSION = 2; version 1 held int4 scales as
 *            float32, and is refused with how to remake the file)
 *    12   4  u32 level: 8 (int8) or 4 (int4)
 *    16   4  u32 group size: int4, a multiple of 32 (lib/kernels/quant.h); int8, 0
 *    20   4  u32 flags: bit 0 (QF_EMBEDDINGS) = model.embed_tokens.weight
 *            is quantized; no other bit may be set
 *    24   4  u32 number of tensors N
 *    28   4  u32 0
 *    32   8  u64 file size, exactly
 *    40  16  u64 offset, u64 length of config.json
 *    56  16  u64 offset, u64 length of generation_config.json
 *    72  16  u64 offset, u64 length of tokenizer.json
 *    88  16  u64 offset, u64 length of the tensor index (N * 128)
 *   104  24  zero
 *   then the three JSON texts and the index, in that order, each starting
 *   where the previous ended; then the tensors, each region 64-byte aligned
 *   (zero padding between regions).
 *
 *   tensor index entry, 128 bytes
 *     0  80  name, UTF-8, NUL-terminated and NUL-padded (at most 79 bytes)
 *    80   4  u32 type: enum wtype (0 f32, 1 bf16, 2 int8, 3 int4)
 *    84   4  u32 ndim: 1 or 2 (int8 and int4 tensors are 2-D)
 *    88  16  u64 shape[0], u64 shape[1] (0 when ndim is 1)
 *   104   8  u64 data offset (a multiple of 64)
 *   112   8  u64 data length: elements x 4 (f32), x 2 (bf16), x 1 (int8),
 *            / 2 (int4; the packing of lib/kernels/quant.h)
 *   120   8  u64 scales offset (a multiple of 64), 0 for f32 and bf16:
 *            int8, float32 scales, rows of them; int4, IEEE halves
 *            (binary16), rows x cols / group, as the quantizer rounds
 *            them (lib/kernels/quant.h): 4.5 bits a weight with groups of
 *            32, as GGUF's Q4_0
 *
 *   Tensors appear in index order; each tensor's data precedes its scales,
 *   and every region starts at or after the end of the previous one.
 *
 * qfile_parse trusts nothing before checking it: the header against the
 * file size, each section inside the file and in order, the JSON texts
 * (through config_parse and gen_config_parse), every index entry (name,
 * type, shape, lengths, alignment, range, order), the scheme against the
 * tensors (int8 only in a level-8 file, int4 only in a level-4 file with a
 * shape the group size divides, the embeddings quantized exactly when the
 * flag says so, every other 2-D weight quantized), the scales (finite), and
 * the tensor list against the config's manifest (lib/format/manifest.h).
 *
 * The int4 scales are widened to float32 as they are checked, into memory
 * the qfile owns (an eighth of the codes' bytes), so that every reader
 * sees the float scales of lib/kernels/quant.h; a model loaded with
 * --mmap holds that copy beside the mapping.
 */
#ifndef QFILE_H
#define QFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format/config.h"
#include "core/err.h"
#include "core/outfile.h"
#include "core/mapfile.h"
#include "kernels/weights.h"

#define QF_MAGIC "QWPQUANT"
#define QF_VERSION 2
#define QF_HEADER 128
#define QF_ENTRY 128
#define QF_NAME 80
#define QF_ALIGN 64
#define QF_EMBEDDINGS 1u

#define QF_EMBED_NAME "model.embed_tokens.weight"

struct qtensor {
	char name[QF_NAME];
	enum wtype type;
	int ndim;
	int64_t shape[2];
	uint64_t data_off, data_len, scales_off;
	const void *data;      /* views into the mapping */
	const float *scales;   /* NULL for f32 and bf16; int4's widened */
};

struct qfile {
	struct mapfile map;    /* qfile_open's mapping (empty after qfile_parse) */
	const unsigned char *base;  /* the file's bytes */
	size_t size;
	int level;             /* 8 or 4 */
	int group_size;        /* int4; 0 for int8 */
	bool embeddings;       /* QF_EMBEDDINGS */
	struct model_config cfg;
	struct gen_config gen;
	const char *config_json, *gen_json, *tokenizer_json; /* views, not NUL-terminated */
	size_t config_len, gen_len, tokenizer_len;
	int ntensors;
	struct qtensor *t;     /* in file order */
	float *q4_scales;      /* every int4 tensor's scales, widened */
	size_t q4_scales_bytes;
};

/* Whether the first bytes of the file at path are the container's magic
 * (a directory or unreadable file is not a container). */
bool qfile_sniff(const char *path);

/* The version in the header of the container at path, or 0 when path is
 * not a container. */
uint32_t qfile_version_of(const char *path);

/* Maps and validates path. On failure fills e with "path: problem" and
 * leaves nothing to free; on success the caller frees with qfile_close. */
int qfile_open(struct qfile *f, const char *path, struct err *e);

/* Validates an in-memory image (the fuzzer's entry point, and a copy in
 * anonymous memory); views point into buf, which must outlive f and which
 * f does not own. name is used in messages. Free with qfile_close. */
int qfile_parse(struct qfile *f, const unsigned char *buf, size_t size,
		const char *name, struct err *e);

void qfile_close(struct qfile *f);

/* The tensor with this name, or NULL. */
const struct qtensor *qfile_find(const struct qfile *f, const char *name);

/* The matrix view of a 2-D tensor (any type). */
struct wmat qtensor_wmat(const struct qfile *f, const struct qtensor *t);

/* The scheme's rule: a tensor is quantized when it is a 2-D weight, except
 * the embedding matrix unless embeddings is set. */
bool qfile_quantizes(const char *name, int ndim, bool embeddings);

const char *qfile_type_name(enum wtype t);

/* ---- writing ---- */

/* What the writer needs of each tensor up front (the whole layout is
 * decided before the first byte is written). */
struct qfile_entry {
	const char *name;
	enum wtype type;
	int ndim;
	int64_t shape[2];
};

struct qfile_writer {
	struct outfile out;  /* written whole: lib/core/outfile.h */
	uint64_t pos;    /* bytes written so far */
	int next;        /* index of the next tensor to write */
	int ntensors;
	uint64_t *data_off, *scales_off; /* per tensor */
	int group_size;
	struct qfile_entry *t;  /* copies of the names */
};

struct qfile_header {
	int level, group_size;
	bool embeddings;
	const char *config_json, *gen_json, *tokenizer_json;
	size_t config_len, gen_len, tokenizer_len;
};

/* Creates a temporary file beside dest (dest's directory, ".NAME.tmp.XXXXXX"),
 * lays out every tensor and writes the header, the JSON texts and the index.
 * On failure nothing is left on disk. The caller then writes each tensor in
 * order with qfile_write_tensor and ends with qfile_write_commit or qfile_write_abort. */
int qfile_write_begin(struct qfile_writer *w, const char *dest, const struct qfile_header *h,
	     const struct qfile_entry *t, int n, struct err *e);

/* Writes the next tensor: data (its data length) and, for int8 and int4,
 * its float scales (int4's written as halves: a scale that is not exactly
 * one, from a weight beyond 8 x 65504, is an error naming the tensor). */
int qfile_write_tensor(struct qfile_writer *w, const void *data, const float *scales,
		    struct err *e);

/* Every tensor written: the file replaces dest (outfile_commit). On
 * failure the temporary file is removed. Frees w. */
int qfile_write_commit(struct qfile_writer *w, struct err *e);

/* Removes the temporary file and frees w. */
void qfile_write_abort(struct qfile_writer *w);

/* Bytes of a tensor's data and scales in the container. */
uint64_t qfile_data_len(enum wtype t, int ndim, const int64_t *shape);
uint64_t qfile_scales_len(enum wtype t, const int64_t *shape, int group_size);

#endif
