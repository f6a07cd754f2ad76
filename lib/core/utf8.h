/* utf8: decoding one character, and holding back partial characters when
 * text arrives in pieces (token by token).
 *
 * A "valid" character is what the Unicode standard allows: the shortest
 * encoding of a code point in U+0000..U+10FFFF that is not a surrogate.
 * Anything else is invalid, one byte at a time: a reader that meets an
 * invalid sequence treats its first byte as a character of its own and
 * goes on at the next byte.
 */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the character at s[0..n), n > 0. Returns its length (1..4) and
 * stores the code point in *cp, or returns 0 when s does not start with a
 * valid character. */
int utf8_decode(const unsigned char *s, size_t n, int32_t *cp);

/* Encodes cp (a valid code point) into out[0..4); returns the length. */
int utf8_encode(int32_t cp, unsigned char *out);

/* A streaming holder: bytes go in as they come; what comes out is
 * everything except a trailing, still incomplete, valid prefix of a
 * character (at most 3 bytes), which waits for the next push. Invalid bytes
 * are not held: they come out as they are, so the concatenation of every
 * output plus the final flush is exactly the concatenation of the inputs. */
struct utf8_hold {
	unsigned char buf[3];
	int n;
};

/* Pushes in[0..n) and writes the releasable bytes to out, which must have
 * room for n + 3 bytes. Returns the number of bytes written. */
size_t utf8_hold_push(struct utf8_hold *h, const unsigned char *in, size_t n,
		      unsigned char *out);

/* Releases whatever is still held (an incomplete character at the end of
 * the stream) into out (room for 3 bytes); returns the count. */
size_t utf8_hold_flush(struct utf8_hold *h, unsigned char *out);

#endif
