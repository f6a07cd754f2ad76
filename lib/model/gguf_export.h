/* gguf_export: a safetensors model written (quantize --format gguf)
 * as the GGUF file llama.cpp's converter and llama-quantize would write
 * (lib/format/gguf_write.h), so that llama.cpp, ollama and this engine read
 * it alike.
 */
#ifndef GGUF_EXPORT_H
#define GGUF_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include "core/err.h"
#include "format/config.h"
#include "format/gguf.h"
#include "format/safetensors.h"

struct gguf_out_model {
	const char *name;                 /* general.name */
	const struct st_file *st;         /* validated against cfg */
	const struct model_config *cfg;
	const struct gen_config *gen;     /* general.sampling.*, or NULL */
	const char *tok_json;             /* tokenizer.json */
	size_t tok_len;
	const char *tok_name;             /* for messages */
	const char *chat_template;        /* tokenizer_config.json's, or NULL */
};

/* A file's mix: which type each tensor gets (gguf_export.c's mix_type).
 * The values are llama.cpp's general.file_type (LLAMA_FTYPE_*). */
enum gguf_mix {
	GGUF_MIX_F16 = 1,
	GGUF_MIX_Q4_0 = 2,
	GGUF_MIX_Q8_0 = 7,
	GGUF_MIX_Q4_K_M = 15,
	GGUF_MIX_Q5_K_M = 17,
	GGUF_MIX_Q6_K = 18,
	GGUF_MIX_BF16 = 32,
};

/* Writes m to out with its vectors as F32 and its matrices as llama.cpp's
 * llama-quantize (without an importance matrix) would store them in a file
 * of that mix: BF16, F16 and Q8_0 every matrix; Q4_0 with the embedding and
 * the LM head Q8_0; Q4_K_M, Q5_K_M and Q6_K by the table in docs/gguf.md
 * (K-quants where the row length is a multiple of 256, else their
 * fallbacks Q5_0, Q5_1, Q8_0). Whole or not at all (lib/core/outfile.h).
 * 0, or -1 with e (nothing left on disk). */
int gguf_write_model(const char *out, const struct gguf_out_model *m, enum gguf_mix mix,
		     struct err *e);

#endif
