/* draft: prompt-lookup drafting. Guesses the tokens that come next from
 * the sequence itself: when its last n tokens appeared earlier, the tokens
 * that followed them there. forward runs the guesses in one batch with the
 * next token and the sampler verifies them (lib/format/stream.h); a wrong
 * guess costs compute, never a different token.
 *
 * The sequence is the accepted context (what forward's KV cache holds,
 * drafts excluded). For each n in 1..ngram an index maps an n-gram to the
 * last earlier position where it ended and was followed by a token, kept as
 * tokens arrive (draft_push: ngram hash-table writes), so a proposal costs
 * at most ngram lookups plus the copy, whatever the sequence's length. The
 * tables are direct-mapped (a colliding n-gram overwrites the slot): a
 * lookup checks the tokens at the position it finds, so a collision loses
 * a match, never proposes a wrong one.
 *
 * Proposal: the longest n (ngram down to 1) whose last n tokens have an
 * earlier occurrence, and up to max tokens that followed it; where the
 * copy reaches the end of the sequence it goes on through the tokens it
 * has proposed (a period repeats).
 *
 * Left out: scoring several earlier matches, a draft model.
 */
#ifndef DRAFT_H
#define DRAFT_H

#include <stdint.h>
#include "core/err.h"

#define DRAFT_NGRAM_MAX 8

struct draft {
	int ngram;        /* longest n-gram looked up */
	int32_t *ids;     /* the sequence, cap ids */
	int n, cap;
	int32_t *slots[DRAFT_NGRAM_MAX];  /* per n - 1: end positions, -1 empty */
	uint32_t mask;    /* table size - 1 */
};

/* Allocates for a sequence of up to cap ids and n-grams up to ngram
 * (1..DRAFT_NGRAM_MAX). Returns 0 or -1 with e set; free with draft_free. */
int draft_init(struct draft *d, int ngram, int cap, struct err *e);
void draft_free(struct draft *d);

/* Appends an accepted id (the caller keeps n < cap) and indexes the
 * n-grams that end just before it. */
void draft_push(struct draft *d, int32_t id);

/* Keeps the first n ids (0 <= n <= d->n) and indexes them again. */
void draft_keep(struct draft *d, int n);

/* Writes up to max proposed ids into out; returns how many (0: no match). */
int draft_propose(const struct draft *d, int max, int32_t *out);

#endif
