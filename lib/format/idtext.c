/* idtext: see idtext.h. */
#include "format/idtext.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tok[0..len) for a message: at most 24 bytes, control characters and
 * bytes past ASCII as \xNN (so a NUL shows as one). */
static const char *show(char *buf, const char *tok, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < len && i < 24; i++) {
		unsigned char c = (unsigned char)tok[i];
		if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
			o += (size_t)sprintf(buf + o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (len > 24)
		o += (size_t)sprintf(buf + o, "...");
	buf[o] = 0;
	return buf;
}

int idtext_append(const char *text, size_t n, const char *name, long line, int n_vocab,
		  struct idtext *out, struct err *e)
{
	const char *p = text, *end = text + n;
	for (;;) {
		while (p < end && isspace((unsigned char)*p))
			line += *p++ == '\n';
		if (p == end)
			return 0;
		const char *tok = p;
		while (p < end && !isspace((unsigned char)*p))
			p++;
		size_t len = (size_t)(p - tok);
		char shown[24 * 4 + 4];
		/* digits only, so that strtol cannot stop early (at a NUL, say) */
		size_t d = 0;
		while (d < len && isdigit((unsigned char)tok[d]))
			d++;
		if (d != len)
			return err_set(e, "%s: line %ld: '%s' is not a token id", name, line,
				       show(shown, tok, len));
		errno = 0;
		long v = len <= 18 ? strtol(tok, NULL, 10) : LONG_MAX;
		if (errno || v >= n_vocab)
			return err_set(e, "%s: line %ld: id %s is outside the vocabulary "
				       "(0..%d)", name, line, show(shown, tok, len), n_vocab - 1);
		if (out->n == out->cap) {
			long cap = out->cap ? 2 * out->cap : 256;
			int *more = realloc(out->ids, sizeof *more * (size_t)cap);
			if (!more)
				return err_set(e, "%s: out of memory", name);
			out->ids = more;
			out->cap = cap;
		}
		out->ids[out->n++] = (int)v;
	}
}

int *idtext_parse(const char *text, size_t len, const char *name, int n_vocab, long *n,
		  struct err *e)
{
	struct idtext t = { 0 };
	if (idtext_append(text, len, name, 1, n_vocab, &t, e) < 0) {
		free(t.ids);
		return NULL;
	}
	if (t.n == 0) {
		free(t.ids);
		err_set(e, "%s: no token ids", name);
		return NULL;
	}
	*n = t.n;
	return t.ids;
}
