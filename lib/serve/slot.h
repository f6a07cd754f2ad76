/* slot: one conversation context for the server, a `forward MODEL` child
 * process driven over its pipes as docs/chat.md describes: the server is
 * the pipe protocol's client, and samples in-process (lib/sample) exactly
 * as `sample` does.
 *
 * A slot remembers the ids its forward's context holds. A generation
 * whose prompt begins with some of them keeps those positions (`@N`) and
 * computes only the rest, so a conversation's later turn computes its new
 * message and its answer, not the conversation again.
 *
 * A generation, step by step (so that an HTTP response can be written
 * token by token and abandoned at any point):
 *
 *   slot_begin    sends the prompt, reads the stream header, opens the
 *                 feedback FIFO, seeds the generator and the repetition
 *                 penalty's context (the whole prompt, as a fresh `sample`
 *                 sees it);
 *   slot_next     reads a frame and draws a token from it (with its
 *                 log-probabilities when asked);
 *   slot_feed     sends the drawn token back (forward then computes it);
 *   slot_end      closes the FIFO, reads to the end record and checks that
 *                 the context holds exactly what the slot believes.
 *
 * As with `sample`, the token a generation stops on (end of sequence, the
 * last one allowed, a stop string, a full context) is never fed back, so
 * the context holds the prompt and the tokens fed.
 *
 * A slot is used by one thread at a time (lib/serve/slots.h hands them
 * out). Nothing here prints or exits.
 */
#ifndef SLOT_H
#define SLOT_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/err.h"
#include "core/rng.h"
#include "format/stream.h"
#include "sample/sampler.h"

/* The most top log-probabilities a token carries. */
#define SLOT_MAX_TOP 20

struct slot {
	char *const *argv;   /* forward's command line (argv[0] a path); not owned */
	pid_t pid;           /* forward; 0 when not running */
	int to_fwd;          /* forward's stdin */
	FILE *from_fwd;      /* forward's stdout */
	uint32_t ctx;        /* forward's context, from its first end record */
	int32_t *hist;       /* the ids the context holds, n_hist of them */
	int n_hist, cap;
	/* the generation in progress */
	int active;
	struct stream_header h;
	struct stream_frame fr;
	int fifo;
	int frames;          /* frames read in this generation */
	struct sampler *s;
	struct sampler_params p;
	struct rng rng;
	uint32_t computed;   /* slot_end: positions computed for the generation */
};

/* The sampling of one generation: the stream header's parameters (the
 * model's generation_config.json) with those over sets in their place
 * (sampler_params_override), and the seed. */
struct slot_params {
	struct sampler_params over;
	uint64_t seed;
};

/* A drawn token. */
struct slot_token {
	int32_t id;
	int eos;             /* an end-of-sequence id of the stream header */
	int last;            /* drawn at the context's last position: no more */
	int n_top;           /* set by the caller: 0 no log-probabilities, else
	                      * the token's and n_top - 1 most probable ones' */
	double logprob;      /* under the model (softmax of the raw logits) */
	struct sampler_cand top[SLOT_MAX_TOP];  /* .id and .x = log-probability */
};

/* Starts forward (argv, NULL-terminated; not copied: it must outlive the
 * slot) and asks it its context size. Returns 0, or -1 with e set
 * ("forward ended before it answered" when it could not start: it has
 * printed why on the server's stderr). */
int slot_start(struct slot *sl, char *const *argv, struct err *e);

/* Ends forward (end of its input) and frees everything. */
void slot_stop(struct slot *sl);

/* How many of ids[0..n) the slot's context already holds (a common
 * prefix), at most n - 1: a prompt computes at least one position. */
int slot_common(const struct slot *sl, const int32_t *ids, int n);

/* Begins a generation from the prompt ids[0..n) (n >= 1). Returns the
 * positions kept from the context (the rest of the prompt is computed),
 * or -1 with e set: the prompt does not fit (e.kind ERR_INVALID, "the
 * prompt is 5000 tokens; the context holds 4096 (forward --ctx)"), or
 * forward failed (the slot restarts it; ERR_WRITE). */
int slot_begin(struct slot *sl, const int32_t *ids, int n, const struct slot_params *p,
	       struct err *e);

/* Draws the next token into *t. Returns 1, 0 when forward ended the
 * stream first, or -1 with e set. */
int slot_next(struct slot *sl, struct slot_token *t, struct err *e);

/* Sends id (the token slot_next drew) back to forward. Returns 0 or -1. */
int slot_feed(struct slot *sl, int32_t id, struct err *e);

/* Ends the generation. Returns 0, or -1 with e set when forward failed or
 * its context is not what the slot expected; the slot then restarts
 * forward (its context empty), and stays usable if that worked. */
int slot_end(struct slot *sl, struct err *e);

#endif
