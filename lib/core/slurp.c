/* slurp: see slurp.h. */
#include "core/slurp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *slurp(const char *path, size_t *len, struct err *e)
{
	int std = !strcmp(path, "-");
	const char *name = std ? "<stdin>" : path;
	FILE *f = std ? stdin : fopen(path, "rb");
	if (!f) {
		err_set(e, "%s: %s", name, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0, k;
	char *buf = malloc(cap + 1);
	while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap) {
			char *b = realloc(buf, (cap *= 2) + 1);
			if (!b)
				free(buf);
			buf = b;
		}
	}
	int bad = ferror(f), saved = errno;
	if (!std)
		fclose(f);
	if (!buf) {
		err_set(e, "%s: out of memory", name);
		return NULL;
	}
	if (bad) {
		free(buf);
		err_set(e, "%s: %s", name, strerror(saved));
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}
