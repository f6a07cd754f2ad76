/* tokenizer: a HuggingFace tokenizer.json for byte-level BPE (Qwen2.5 and
 * the models that share its design), loaded and run exactly as
 * HuggingFace tokenizers 0.23 runs it.
 *
 * Supported, and checked at load: model BPE (no dropout, no unk_token, no
 * byte fallback, no word prefix/suffix, ignore_merges false; ids may
 * leave gaps, at most half of them unused), merges as "a b" strings or
 * ["a", "b"] pairs; added tokens without lstrip, rstrip, single_word or normalized,
 * with the ids HuggingFace gives them (it ignores the file's: a token the
 * vocabulary has keeps that id, the others follow the vocabulary in order);
 * normalizer NFC or none; pre-tokenizer
 * Sequence[Split(the pattern in pretok.h, Isolated), ByteLevel(no prefix
 * space, no regex)]; post-processor ByteLevel or none; decoder ByteLevel;
 * no truncation, no padding. Anything else is refused with a message that
 * names it, so a different tokenizer works exactly or not at all.
 *
 * Encoding: added tokens are matched first on the raw text (leftmost, then
 * longest); each stretch between them is NFC-normalized (utf8proc),
 * split into pieces by the pattern, mapped to bytes and merged by BPE.
 * Bytes that are not valid UTF-8 (which HuggingFace cannot be given) are
 * kept: each is its own character for the pre-tokenizer (see pretok.h),
 * left alone by NFC, and becomes its byte's token, so decoding gives it
 * back.
 *
 * Decoding: each id's bytes (the inverse of the byte-level alphabet;
 * an added token is its content).
 *
 * A tokenizer caches recent pieces while encoding: one per thread.
 */
#ifndef TOKENIZER_H
#define TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "text/bpe.h"
#include "core/err.h"
#include "core/vocab.h"

struct tokenizer;

/* Loads path, a tokenizer.json (lib/format/modelpath.h finds the one of a
 * model). Returns
 * the tokenizer (free with tok_free) or NULL with e filled
 * ("path: model.byte_fallback: true is not supported"). */
struct tokenizer *tok_load(const char *path, struct err *e);
/* The same from a tokenizer.json held in data[0..size) (a container's
 * embedded copy; the fuzzer's entry point); name is used in messages and
 * as tok_path. Nothing points into data afterwards. */
struct tokenizer *tok_parse(const unsigned char *data, size_t size, const char *name,
			    struct err *e);

/* The same from a vocabulary given as arrays (a GGUF file's; lib/core/vocab.h),
 * with the rest of Qwen2's tokenizer.json (NFC, its pre-tokenizer pattern,
 * ByteLevel): NORMAL tokens are the BPE vocabulary, CONTROL tokens added
 * special tokens, USER tokens added tokens that are not special, UNUSED
 * ones (llama.cpp's padding to the model's vocabulary size) no tokens at
 * all; UNKNOWN and BYTE are refused. It is built as that tokenizer.json
 * text and parsed by tok_parse, so it is checked and run by the same code.
 * name is used in messages and as tok_path. */
struct tokenizer *tok_from_vocab(const struct bpe_vocab *v, const char *name, struct err *e);

void tok_free(struct tokenizer *t);

/* The tokenizer.json that was loaded (the path the caller gave); owned by
 * t. */
const char *tok_path(const struct tokenizer *t);

/* Encode flags. */
enum {
	/* Special added tokens' text is encoded as plain text (HuggingFace's
	 * split_special_tokens); added tokens that are not special are still
	 * matched. */
	TOK_NO_SPECIAL = 1,
};

/* Appends the ids of s[0..n) to out. *n_invalid (if not NULL) gets the
 * number of bytes that were not valid UTF-8. Returns 0, or -1 (out of
 * memory). */
int tok_encode(struct tokenizer *t, const unsigned char *s, size_t n, int flags,
	       struct idvec *out, size_t *n_invalid, struct err *e);

/* One past the largest id. */
int32_t tok_n_ids(const struct tokenizer *t);

/* The bytes of token id (owned by t; *len gets their count), or NULL when
 * id is not a token of this tokenizer. */
const unsigned char *tok_bytes(const struct tokenizer *t, int32_t id, size_t *len);

/* Whether id is an added token marked special (what skip-special drops). */
int tok_is_special(const struct tokenizer *t, int32_t id);

#endif
