/* vocab: a byte-level BPE vocabulary as plain arrays, the form a GGUF file
 * stores it in (tokenizer.ggml.tokens, .token_type, .merges). The reader of
 * a file fills one with views into the file (lib/format/gguf_arch.h); the
 * tokenizer is built from it (lib/text/tokenizer.h, tok_from_vocab). It
 * lives here, below both, so that neither layer includes the other.
 */
#ifndef VOCAB_H
#define VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Token types, as llama.cpp numbers them. */
enum vocab_type {
	VOCAB_NORMAL = 1, VOCAB_UNKNOWN = 2, VOCAB_CONTROL = 3, VOCAB_USER = 4,
	VOCAB_UNUSED = 5, VOCAB_BYTE = 6
};

struct vocab_str {
	const char *s;   /* not NUL-terminated */
	size_t len;
};

struct bpe_vocab {
	size_t n_tokens;
	struct vocab_str *tokens;  /* id -> text in the byte-level alphabet */
	int32_t *types;            /* id -> enum vocab_type */
	size_t n_merges;
	struct vocab_str *merges;  /* "left right", lowest rank first */
};

/* Frees the arrays (not the strings they view). */
static inline void bpe_vocab_free(struct bpe_vocab *v)
{
	free(v->tokens);
	free(v->types);
	free(v->merges);
	v->tokens = v->merges = NULL;
	v->types = NULL;
	v->n_tokens = v->n_merges = 0;
}

#endif
