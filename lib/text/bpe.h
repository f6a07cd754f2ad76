/* bpe: the byte-level BPE merge loop, with its merge table and a cache of
 * recent pieces.
 *
 * A piece (one pre-token) starts as one symbol per byte (the token of that
 * byte's character in the byte-level alphabet); then, repeatedly, the
 * adjacent pair with the lowest merge rank is replaced by its merged token,
 * the leftmost one when the same pair occurs more than once. This is
 * HuggingFace's BPE with dropout off, no unknown token and no word
 * prefix/suffix: a priority queue of candidate pairs keyed by (rank,
 * position) over a linked list of symbols, so a 100,000-byte piece costs
 * O(n log n), not a rescan per merge.
 *
 * Results are cached per piece (pieces up to 255 bytes; the cache is
 * cleared when full). A struct bpe is therefore not safe to share between
 * threads: give each thread its own.
 */
#ifndef BPE_H
#define BPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* A growable array of token ids. */
struct idvec {
	int32_t *v;
	size_t n, cap;
};

/* Appends id; returns 0, or -1 when out of memory. */
int idvec_push(struct idvec *iv, int32_t id);
void idvec_free(struct idvec *iv);

struct bpe_slot;
struct bpe_pair;

struct bpe {
	int32_t byte_id[256];      /* token of each single byte */
	struct bpe_pair *pairs;    /* open-addressed merge table */
	size_t pairs_mask;
	/* the cache */
	struct bpe_slot *slots;
	size_t n_cached;
	unsigned char *arena;
	size_t arena_used;
	/* scratch for one piece, grown as needed */
	int32_t *sym, *prev, *next;
	uint64_t *heap;
	size_t scratch_cap;
};

/* One merge: (left, right) -> merged. */
struct bpe_merge {
	int32_t left, right, merged;
};

/* Builds the merge table from merges[0..n), merges[i] having rank i (lower
 * merges first; a pair given twice keeps the later rank, as HuggingFace
 * does), with every byte's token unset (-1: the caller sets byte_id).
 * Returns 0 or -1 (out of memory). Free with bpe_free. */
int bpe_init(struct bpe *b, const struct bpe_merge *merges, size_t n, struct err *e);
void bpe_free(struct bpe *b);

/* Appends the tokens of piece s[0..n) (n > 0) to out. Every byte's token
 * must be set. Returns 0, or -1 when out of memory. */
int bpe_encode(struct bpe *b, const unsigned char *s, size_t n, struct idvec *out,
	       struct err *e);

#endif
