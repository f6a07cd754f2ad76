/* stoptext: text that ends before the first of some stop strings, released
 * as it streams in.
 *
 * Bytes are pushed as they come (a token's text at a time); what can no
 * longer be the beginning of a stop string is released, and text that
 * might begin one is held back until the next bytes decide. At the first
 * stop string the text before it is released and the stream is over:
 * nothing of the stop string is ever released. `tok decode --stop` and
 * `serve`'s "stop" field both use it.
 */
#ifndef STOPTEXT_H
#define STOPTEXT_H

#include <stddef.h>

#include "core/sbuf.h"

struct stoptext {
	const char *const *stops;  /* n NUL-terminated, non-empty strings; not owned */
	int n;
	struct sbuf held;          /* bytes not released yet */
};

/* Pushes b[0..len) and appends to out what is now certain. Returns 1 when
 * a stop string was met (out then ends where it began; push nothing
 * more), 0 otherwise. Out of memory shows as out->oom or s->held.oom. */
int stoptext_push(struct stoptext *s, const void *b, size_t len, struct sbuf *out);

/* The end of the stream without a stop string: appends what is held. */
void stoptext_flush(struct stoptext *s, struct sbuf *out);

void stoptext_free(struct stoptext *s);

#endif
