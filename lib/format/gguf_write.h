/* gguf_write: a GGUF file (version 3, lib/format/gguf.h) written in one
 * pass to a stream: the metadata and the tensor infos are gathered first
 * (the layout of the data section follows from them), then the header is
 * written, then each tensor's bytes in the order they were declared, each
 * padded with zeros to the alignment (32), the last one too, as llama.cpp
 * writes them.
 *
 *   struct gguf_writer w;
 *   gguf_w_init(&w);
 *   gguf_w_str(&w, "general.architecture", "qwen2", 5); ...
 *   gguf_w_tensor(&w, "token_embd.weight", GGML_BF16, 2, ne); ...
 *   gguf_w_header(&w, fp, e); gguf_w_data(&w, fp, bytes, e); ...
 *   gguf_w_free(&w);
 *
 * Declaring functions record out-of-memory and bad arguments (a tensor
 * whose ne[0] its type's block does not divide, a name too long) in the
 * writer; gguf_w_header reports the first. Writing the file whole or not at
 * all is the caller's (a temporary file renamed into place).
 */
#ifndef GGUF_WRITE_H
#define GGUF_WRITE_H

#include <stdint.h>
#include <stdio.h>
#include "core/err.h"
#include "core/sbuf.h"
#include "core/vocab.h"
#include "format/gguf.h"

struct gguf_writer {
	struct sbuf kv;          /* the key/value pairs as they will be written */
	uint64_t nkv;
	struct sbuf info;        /* the tensor infos */
	uint64_t ntensors;
	uint64_t *bytes;         /* per tensor */
	uint64_t data_end;       /* bytes of the data section so far */
	uint64_t next;           /* the next tensor gguf_w_data writes */
	char bad[200];           /* the first problem, "" when none */
};

void gguf_w_init(struct gguf_writer *w);
void gguf_w_free(struct gguf_writer *w);

void gguf_w_u32(struct gguf_writer *w, const char *key, uint32_t v);
void gguf_w_i32(struct gguf_writer *w, const char *key, int32_t v);
void gguf_w_f32(struct gguf_writer *w, const char *key, float v);
void gguf_w_bool(struct gguf_writer *w, const char *key, int v);
void gguf_w_str(struct gguf_writer *w, const char *key, const char *s, size_t n);
void gguf_w_strs(struct gguf_writer *w, const char *key, const struct vocab_str *s,
		 size_t n);
void gguf_w_i32s(struct gguf_writer *w, const char *key, const int32_t *v, size_t n);

/* Declares the next tensor: ne in ggml's order (ne[0] the row length). */
void gguf_w_tensor(struct gguf_writer *w, const char *name, enum gguf_ttype type,
		   int ndim, const int64_t *ne);

/* The header: "GGUF", version 3, the counts, the pairs, the infos, padding.
 * 0, or -1 with e "name: ..." (a recorded problem, a write error). */
int gguf_w_header(struct gguf_writer *w, FILE *fp, const char *name, struct err *e);

/* The next tensor's bytes (as many as its type and shape take) and the
 * padding after them. */
int gguf_w_data(struct gguf_writer *w, FILE *fp, const void *data, const char *name,
		struct err *e);

#endif
