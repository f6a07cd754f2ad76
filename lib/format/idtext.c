/* idtext: see idtext.h. */
#include "format/idtext.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int *idtext_parse(const char *text, const char *name, int n_vocab, long *n,
		  struct err *e)
{
	long cap = 256, k = 0, line = 1;
	int *ids = malloc(sizeof *ids * (size_t)cap);
	const char *p = text;
	while (ids) {
		while (isspace((unsigned char)*p))
			line += *p++ == '\n';
		if (!*p)
			break;
		const char *tok = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		int len = (int)(p - tok);
		char *end;
		errno = 0;
		long v = strtol(tok, &end, 10);
		if (end != p || !isdigit((unsigned char)tok[0])) {
			err_set(e, "%s: line %ld: '%.*s' is not a token id", name, line, len, tok);
			free(ids);
			return NULL;
		}
		if (errno || v >= n_vocab) {
			err_set(e, "%s: line %ld: id %.*s is outside the vocabulary (0..%d)", name,
				line, len, tok, n_vocab - 1);
			free(ids);
			return NULL;
		}
		if (k == cap) {
			int *more = realloc(ids, sizeof *ids * (size_t)(cap *= 2));
			if (!more)
				free(ids);
			ids = more;
		}
		if (ids)
			ids[k++] = (int)v;
	}
	if (!ids) {
		err_set(e, "%s: out of memory", name);
		return NULL;
	}
	if (k == 0) {
		free(ids);
		err_set(e, "%s: no token ids", name);
		return NULL;
	}
	*n = k;
	return ids;
}
