/* idtext: see idtext.h. */
#include "format/idtext.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int idtext_append(const char *text, const char *name, long line, int n_vocab,
		  struct idtext *out, struct err *e)
{
	const char *p = text;
	for (;;) {
		while (isspace((unsigned char)*p))
			line += *p++ == '\n';
		if (!*p)
			return 0;
		const char *tok = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		int len = (int)(p - tok);
		char *end;
		errno = 0;
		long v = strtol(tok, &end, 10);
		if (end != p || !isdigit((unsigned char)tok[0]))
			return err_set(e, "%s: line %ld: '%.*s' is not a token id", name, line,
				       len, tok);
		if (errno || v >= n_vocab)
			return err_set(e, "%s: line %ld: id %.*s is outside the vocabulary "
				       "(0..%d)", name, line, len, tok, n_vocab - 1);
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

int *idtext_parse(const char *text, const char *name, int n_vocab, long *n,
		  struct err *e)
{
	struct idtext t = { 0 };
	if (idtext_append(text, name, 1, n_vocab, &t, e) < 0) {
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
