/* tok_vocab: a tokenizer from a vocabulary given as arrays (tokenizer.h,
 * tok_from_vocab). The arrays are written out as the tokenizer.json that
 * Qwen2's tokenizer ships (the same normalizer, pre-tokenizer pattern and
 * byte-level components) and that text goes through tok_parse: one parser,
 * one set of checks, one encoder for both kinds of file. */
#include "text/tokenizer.h"
#include "text/pretok.h"
#include "core/sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s[0..n) as a JSON string: quotes, backslashes and control characters
 * escaped; every other byte as it is (tok_parse checks the UTF-8). */
static void put_str(struct sbuf *b, const char *s, size_t n)
{
	sbuf_put(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		sbuf_put(b, s + run, i - run);
		char esc[8];
		snprintf(esc, sizeof esc, "\\u%04x", c);
		sbuf_puts(b, esc);
		run = i + 1;
	}
	sbuf_put(b, s + run, n - run);
	sbuf_put(b, "\"", 1);
}

static const char BYTELEVEL[] =
	"{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, "
	"\"use_regex\": false}";

struct tokenizer *tok_from_vocab(const struct bpe_vocab *v, const char *name, struct err *e)
{
	for (size_t i = 0; i < v->n_tokens; i++)
		if (v->types[i] < VOCAB_NORMAL || v->types[i] > VOCAB_UNUSED ||
		    v->types[i] == VOCAB_UNKNOWN) {
			err_set(e, "%s: token %zu: type %d is not supported (normal, control, "
				"user-defined or unused)", name, i, (int)v->types[i]);
			return NULL;
		}
	struct sbuf b = { 0 };
	sbuf_puts(&b, "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, "
		  "\"added_tokens\": [");
	const char *sep = "";
	for (size_t i = 0; i < v->n_tokens; i++) {
		int t = v->types[i];
		if (t != VOCAB_CONTROL && t != VOCAB_USER)
			continue;
		char head[64];
		snprintf(head, sizeof head, "%s{\"id\": %zu, \"content\": ", sep, i);
		sbuf_puts(&b, head);
		put_str(&b, v->tokens[i].s, v->tokens[i].len);
		sbuf_puts(&b, ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
			  "\"normalized\": false, \"special\": ");
		sbuf_puts(&b, t == VOCAB_CONTROL ? "true}" : "false}");
		sep = ", ";
	}
	sbuf_puts(&b, "], \"normalizer\": {\"type\": \"NFC\"}, \"pre_tokenizer\": {\"type\": "
		  "\"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
		  "{\"Regex\": ");
	put_str(&b, PRETOK_QWEN2_PATTERN, strlen(PRETOK_QWEN2_PATTERN));
	sbuf_puts(&b, "}, \"behavior\": \"Isolated\", \"invert\": false}, ");
	sbuf_puts(&b, BYTELEVEL);
	sbuf_puts(&b, "]}, \"post_processor\": ");
	sbuf_puts(&b, BYTELEVEL);
	sbuf_puts(&b, ", \"decoder\": ");
	sbuf_puts(&b, BYTELEVEL);
	sbuf_puts(&b, ", \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
		  "\"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": \"\", "
		  "\"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false, "
		  "\"vocab\": {");
	sep = "";
	for (size_t i = 0; i < v->n_tokens; i++) {
		if (v->types[i] != VOCAB_NORMAL)
			continue;
		sbuf_puts(&b, sep);
		put_str(&b, v->tokens[i].s, v->tokens[i].len);
		char id[32];
		snprintf(id, sizeof id, ": %zu", i);
		sbuf_puts(&b, id);
		sep = ", ";
	}
	sbuf_puts(&b, "}, \"merges\": [");
	for (size_t i = 0; i < v->n_merges; i++) {
		sbuf_puts(&b, i ? ", " : "");
		put_str(&b, v->merges[i].s, v->merges[i].len);
	}
	sbuf_puts(&b, "]}}");
	if (b.oom) {
		free(b.p);
		err_set(e, "%s: out of memory", name);
		return NULL;
	}
	struct tokenizer *t = tok_parse((const unsigned char *)b.p, b.n, name, e);
	free(b.p);
	/* The JSON text is ours, not a file anyone has: its line and column
	 * mean nothing to a reader, the arrays do. */
	char *at = t ? NULL : strstr(e->msg, "not valid JSON (line ");
	char *end = at ? strstr(at, "): ") : NULL;
	if (end) {
		char rest[sizeof e->msg];
		snprintf(rest, sizeof rest, "%s", end + 3);
		snprintf(at, sizeof e->msg - (size_t)(at - e->msg), "tokenizer.ggml.*: %s", rest);
	}
	return t;
}
