/* slots: the server's contexts (lib/serve/slot.h) and the bounded queue of
 * requests that wait for one.
 *
 * A request takes the free slot whose context shares the longest prefix
 * with its prompt (so a conversation's next turn finds its own context),
 * else waits; at most max_wait requests wait, and one more is refused at
 * once, for the server to answer 503.
 */
#ifndef SLOTS_H
#define SLOTS_H

#include <pthread.h>
#include <stdint.h>

#include "serve/slot.h"

struct slots {
	struct slot *v;
	int *busy;
	int n, max_wait, waiting;
	pthread_mutex_t mu;
	pthread_cond_t freed;
};

/* Starts n slots, each a forward with argv (not copied). Returns 0, or
 * -1 with e set (the ones started are stopped). */
int slots_init(struct slots *ss, int n, int max_wait, char *const *argv, struct err *e);
void slots_free(struct slots *ss);

/* At exit, with requests perhaps in flight: ends every slot's forward
 * (SIGTERM, which removes its FIFO; SIGKILL after 2 s) and waits for it,
 * touching nothing else of the slots. */
void slots_end(struct slots *ss);

/* Whether the client of a request has gone away (its arg). */
typedef int slots_gone_fn(void *arg);

/* A free slot for the prompt ids[0..n) into *out, waiting in the queue if
 * none is free. Returns 0; SLOTS_FULL when the queue is full; SLOTS_GONE
 * when gone(arg), asked every SLOTS_POLL_MS while the request waits, says
 * its client left (it gives its place in the queue up). */
enum { SLOTS_FULL = 1, SLOTS_GONE = 2, SLOTS_POLL_MS = 100 };
int slots_acquire(struct slots *ss, const int32_t *ids, int n, slots_gone_fn *gone, void *arg,
		  struct slot **out);
void slots_release(struct slots *ss, struct slot *sl);

/* How many slots are busy and how many requests wait, now. */
void slots_count(struct slots *ss, int *busy, int *waiting);

#endif
