/* stoptext: text up to the first stop string (stoptext.h). */
#define _GNU_SOURCE  /* memmem */
#include "text/stoptext.h"

#include <string.h>

int stoptext_push(struct stoptext *s, const void *b, size_t len, struct sbuf *out)
{
	if (!s->n) {
		sbuf_put(out, b, len);
		return 0;
	}
	sbuf_put(&s->held, b, len);
	if (s->held.oom)
		return 0;
	const char *h = s->held.p;
	size_t n = s->held.n, cut = n, keep = 0;
	for (int i = 0; i < s->n; i++) {
		size_t sl = strlen(s->stops[i]);
		const char *at = memmem(h, n, s->stops[i], sl);
		if (at && (size_t)(at - h) < cut)
			cut = (size_t)(at - h);
		/* the longest end of the text that begins this stop string */
		for (size_t k = sl - 1 < n ? sl - 1 : n; k > keep; k--)
			if (!memcmp(h + n - k, s->stops[i], k)) {
				keep = k;
				break;
			}
	}
	if (cut < n) {
		sbuf_put(out, h, cut);
		s->held.n = 0;
		return 1;
	}
	sbuf_put(out, h, n - keep);
	memmove(s->held.p, h + n - keep, keep);
	s->held.n = keep;
	return 0;
}

void stoptext_flush(struct stoptext *s, struct sbuf *out)
{
	if (s->held.n)
		sbuf_put(out, s->held.p, s->held.n);
	s->held.n = 0;
}

void stoptext_free(struct stoptext *s)
{
	free(s->held.p);
	s->held = (struct sbuf){ 0 };
}
