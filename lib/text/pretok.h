/* pretok: the pre-tokenizer of Qwen2 (and other byte-level BPE models that
 * share it), a hand-written matcher for exactly this pattern:
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * with a backtracking regex engine's semantics (the first alternative that
 * matches at a position wins; quantifiers are greedy and give back), which
 * is what HuggingFace tokenizers runs (Oniguruma). The classes are
 * Unicode's: \p{L} and \p{N} are the general categories L* and N* (from
 * utf8proc), \s is the White_Space property (listed below: U+0085 is
 * whitespace, U+001C..U+001F are not), and (?i) folds 's' to 'S' and to
 * U+017F LATIN SMALL LETTER LONG S, as Unicode case folding does.
 *
 * Every character is matched by some alternative, so the pieces cover the
 * text with no gaps ("Isolated" splitting). Bytes that are not valid UTF-8
 * are characters of their own, one byte each, classed like U+FFFD (a
 * symbol: neither letter, number nor space).
 */
#ifndef PRETOK_H
#define PRETOK_H

#include <stddef.h>

/* The pattern above, as it is written in tokenizer.json. */
extern const char PRETOK_QWEN2_PATTERN[];

/* Returns the end of the piece that starts at s[i] (i < n): the next piece
 * is s[i..end). */
size_t pretok_next(const unsigned char *s, size_t n, size_t i);

/* Character classes, exposed for the tests. */
enum {
	PT_L = 1,     /* \p{L} */
	PT_N = 2,     /* \p{N} */
	PT_S = 4,     /* \s: Unicode White_Space */
	PT_CRLF = 8,  /* \r or \n */
};

/* The class bits of code point cp. */
int pretok_class(int cp);

#endif
