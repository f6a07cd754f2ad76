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

/* Writes m to out with its matrices as type (BF16, F16, Q8_0 or Q4_0; with
 * Q4_0 the embedding and the LM head are Q8_0, as llama-quantize's Q4_0
 * mix has them) and its vectors as F32, whole or not at all
 * (lib/core/outfile.h). 0, or -1 with e (nothing left on disk). */
int gguf_write_model(const char *out, const struct gguf_out_model *m, enum gguf_ttype type,
		     struct err *e);

#endif
