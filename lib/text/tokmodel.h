/* tokmodel: the tokenizer and chat template of a model file, wherever the
 * model keeps them: a GGUF file's tokenizer.ggml.* arrays and
 * tokenizer.chat_template, else a tokenizer.json (a file, a model
 * directory's, a container's embedded copy; lib/format/modelfile.h) with
 * the tokenizer_config.json beside it. `tok` and `serve` load theirs here.
 * (This module reads format/ as well as core/.)
 */
#ifndef TOKMODEL_H
#define TOKMODEL_H

#include "core/err.h"
#include "text/tokenizer.h"

/* The tokenizer at path (a GGUF file, a tokenizer.json, a model directory
 * or a container). Returns it (tok_free) or NULL with e set. */
struct tokenizer *tokmodel_load(const char *path, struct err *e);

/* Checks that the chat template that goes with the tokenizer at path (a
 * GGUF file's tokenizer.chat_template, else the tokenizer_config.json
 * beside the tokenizer.json) is the one lib/text/chat.h renders. Returns
 * 0, or -1 with e set. */
int tokmodel_check_template(const char *path, struct err *e);

#endif
