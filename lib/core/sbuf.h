/* sbuf: a growing byte string (text or binary), always NUL-terminated
 * after its n bytes. Appends after a failed allocation do nothing and set
 * oom, so a builder checks once at the end.
 */
#ifndef SBUF_H
#define SBUF_H

#include <stdlib.h>
#include <string.h>

struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static inline void sbuf_put(struct sbuf *b, const void *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static inline void sbuf_puts(struct sbuf *b, const char *s)
{
	sbuf_put(b, s, strlen(s));
}

#endif
