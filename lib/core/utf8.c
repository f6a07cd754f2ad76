/* utf8: see utf8.h. */
#include "core/utf8.h"

#include <string.h>

/* The ranges of the second byte that make a valid sequence, by lead byte
 * (Unicode Table 3-7): they exclude overlong forms, surrogates and code
 * points past U+10FFFF. */
static int second_ok(unsigned char lead, unsigned char b)
{
	switch (lead) {
	case 0xE0: return b >= 0xA0 && b <= 0xBF;
	case 0xED: return b >= 0x80 && b <= 0x9F;
	case 0xF0: return b >= 0x90 && b <= 0xBF;
	case 0xF4: return b >= 0x80 && b <= 0x8F;
	default:   return b >= 0x80 && b <= 0xBF;
	}
}

/* The length a lead byte announces, or 0 when it cannot start a valid
 * character (a continuation byte, C0, C1, F5..FF). */
static int lead_len(unsigned char b)
{
	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF)
		return 2;
	if (b >= 0xE0 && b <= 0xEF)
		return 3;
	if (b >= 0xF0 && b <= 0xF4)
		return 4;
	return 0;
}

/* How many leading bytes of s[0..n) form a valid prefix of one character
 * (complete or not): 0 when s[0] already cannot start one. */
static int valid_prefix(const unsigned char *s, size_t n, int len)
{
	int k = 1;
	if (len > 1 && n > 1) {
		if (!second_ok(s[0], s[1]))
			return 1;
		k = 2;
		while (k < len && (size_t)k < n && (s[k] & 0xC0) == 0x80)
			k++;
	}
	return k;
}

int utf8_decode(const unsigned char *s, size_t n, int32_t *cp)
{
	int len = lead_len(s[0]);
	if (len == 0 || (size_t)len > n || valid_prefix(s, n, len) != len)
		return 0;
	static const unsigned char mask[5] = { 0, 0x7F, 0x1F, 0x0F, 0x07 };
	int32_t c = s[0] & mask[len];
	for (int i = 1; i < len; i++)
		c = (c << 6) | (s[i] & 0x3F);
	*cp = c;
	return len;
}

int utf8_encode(int32_t cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | (cp >> 6));
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | (cp >> 12));
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | (cp >> 18));
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

size_t utf8_hold_push(struct utf8_hold *h, const unsigned char *in, size_t n,
		      unsigned char *out)
{
	size_t total = (size_t)h->n + n;
	memcpy(out, h->buf, (size_t)h->n);
	memcpy(out + h->n, in, n);
	h->n = 0;
	/* Only the last character can be incomplete: look at the last three
	 * bytes for a lead byte whose valid prefix runs to the end. */
	for (size_t back = 1; back <= 3 && back <= total; back++) {
		size_t at = total - back;
		int len = lead_len(out[at]);
		if (len == 0)
			continue; /* a continuation (or invalid) byte: look further back */
		if ((size_t)len > back && valid_prefix(out + at, back, len) == (int)back) {
			memcpy(h->buf, out + at, back);
			h->n = (int)back;
			return at;
		}
		break; /* the last lead byte starts a complete or invalid character */
	}
	return total;
}

size_t utf8_hold_flush(struct utf8_hold *h, unsigned char *out)
{
	size_t n = (size_t)h->n;
	memcpy(out, h->buf, n);
	h->n = 0;
	return n;
}
