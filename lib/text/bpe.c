/* bpe: see bpe.h. */
#include "text/bpe.h"

#include <stdlib.h>
#include <string.h>

struct bpe_pair {
	uint64_t key;   /* left << 32 | right; EMPTY_KEY when free */
	uint32_t rank;
	int32_t merged;
};

struct bpe_slot {
	uint64_t hash;  /* 0 when free */
	uint32_t off;   /* piece bytes, then ids, in the arena */
	uint16_t nbytes, nids;
};

#define EMPTY_KEY UINT64_MAX
#define CACHE_SLOTS (1u << 16)          /* a power of two */
#define CACHE_ARENA (4u << 20)          /* bytes */
#define CACHE_MAX_PIECE 255             /* longer pieces are not cached */

int idvec_push(struct idvec *iv, int32_t id)
{
	if (iv->n == iv->cap) {
		size_t cap = iv->cap ? iv->cap * 2 : 256;
		int32_t *v = realloc(iv->v, cap * sizeof *v);
		if (!v)
			return -1;
		iv->v = v;
		iv->cap = cap;
	}
	iv->v[iv->n++] = id;
	return 0;
}

void idvec_free(struct idvec *iv)
{
	free(iv->v);
	memset(iv, 0, sizeof *iv);
}

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t pair_key(int32_t left, int32_t right)
{
	return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

int bpe_init(struct bpe *b, const struct bpe_merge *merges, size_t n, struct err *e)
{
	memset(b, 0, sizeof *b);
	for (int i = 0; i < 256; i++)
		b->byte_id[i] = -1;
	size_t cap = 1024;
	while (cap < n + n / 2) /* at most 2/3 full */
		cap *= 2;
	b->pairs = malloc(cap * sizeof *b->pairs);
	b->slots = calloc(CACHE_SLOTS, sizeof *b->slots);
	b->arena = malloc(CACHE_ARENA);
	if (!b->pairs || !b->slots || !b->arena) {
		bpe_free(b);
		return err_set(e, "out of memory");
	}
	for (size_t i = 0; i < cap; i++)
		b->pairs[i].key = EMPTY_KEY;
	b->pairs_mask = cap - 1;
	/* The table is bigger than the caches: prefetch a few merges ahead. */
	enum { AHEAD = 8 };
	for (size_t r = 0; r < n; r++) {
		if (r + AHEAD < n)
			__builtin_prefetch(&b->pairs[mix(pair_key(merges[r + AHEAD].left,
								  merges[r + AHEAD].right)) &
						     b->pairs_mask]);
		uint64_t key = pair_key(merges[r].left, merges[r].right);
		size_t i = mix(key) & b->pairs_mask;
		while (b->pairs[i].key != EMPTY_KEY && b->pairs[i].key != key)
			i = (i + 1) & b->pairs_mask;
		b->pairs[i].key = key;
		b->pairs[i].rank = (uint32_t)r;
		b->pairs[i].merged = merges[r].merged;
	}
	return 0;
}

void bpe_free(struct bpe *b)
{
	free(b->pairs);
	free(b->slots);
	free(b->arena);
	free(b->sym);
	free(b->prev);
	free(b->next);
	free(b->heap);
	memset(b, 0, sizeof *b);
}

/* The merge of (left, right), or NULL. */
static inline const struct bpe_pair *find_pair(const struct bpe *b, int32_t left, int32_t right)
{
	uint64_t key = pair_key(left, right);
	size_t i = mix(key) & b->pairs_mask;
	for (;;) {
		const struct bpe_pair *p = &b->pairs[i];
		if (p->key == key)
			return p;
		if (p->key == EMPTY_KEY)
			return NULL;
		i = (i + 1) & b->pairs_mask;
	}
}

/* ---- the cache ---- */

static uint64_t hash_piece(const unsigned char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = mix(h ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	uint64_t w = 0;
	memcpy(&w, s + i, n - i);
	h = mix(h ^ w ^ (uint64_t)(n - i) << 56);
	return h | 1; /* never 0, which marks a free slot */
}

/* The slot for piece s (its own, or the free one where it belongs). */
static struct bpe_slot *cache_slot(struct bpe *b, uint64_t h, const unsigned char *s, size_t n)
{
	size_t i = h & (CACHE_SLOTS - 1);
	for (;;) {
		struct bpe_slot *sl = &b->slots[i];
		if (sl->hash == 0 || (sl->hash == h && sl->nbytes == n &&
				      memcmp(b->arena + sl->off, s, n) == 0))
			return sl;
		i = (i + 1) & (CACHE_SLOTS - 1);
	}
}

static void cache_put(struct bpe *b, struct bpe_slot *sl, uint64_t h,
		      const unsigned char *s, size_t n, const int32_t *ids, size_t nids)
{
	size_t off = (b->arena_used + 3) & ~(size_t)3;
	size_t need = off + ((n + 3) & ~(size_t)3) + nids * sizeof *ids;
	if (need > CACHE_ARENA || b->n_cached >= CACHE_SLOTS / 2) {
		memset(b->slots, 0, CACHE_SLOTS * sizeof *b->slots);
		b->n_cached = 0;
		b->arena_used = 0;
		sl = cache_slot(b, h, s, n);
		off = 0;
		need = ((n + 3) & ~(size_t)3) + nids * sizeof *ids;
	}
	memcpy(b->arena + off, s, n);
	memcpy(b->arena + off + ((n + 3) & ~(size_t)3), ids, nids * sizeof *ids);
	sl->hash = h;
	sl->off = (uint32_t)off;
	sl->nbytes = (uint16_t)n;
	sl->nids = (uint16_t)nids;
	b->arena_used = need;
	b->n_cached++;
}

/* ---- the merge loop ---- */

/* A binary min-heap of (rank << 32 | position). */
static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
	size_t i = (*n)++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h[p] <= v)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
	uint64_t top = h[0], v = h[--*n];
	size_t i = 0, m = *n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= m)
			break;
		if (c + 1 < m && h[c + 1] < h[c])
			c++;
		if (v <= h[c])
			break;
		h[i] = h[c];
		i = c;
	}
	if (m)
		h[i] = v;
	return top;
}

static int grow_scratch(struct bpe *b, size_t n)
{
	if (n <= b->scratch_cap)
		return 0;
	size_t cap = b->scratch_cap ? b->scratch_cap : 64;
	while (cap < n)
		cap *= 2;
	int32_t *sym = realloc(b->sym, cap * sizeof *sym);
	if (sym)
		b->sym = sym;
	int32_t *prev = realloc(b->prev, cap * sizeof *prev);
	if (prev)
		b->prev = prev;
	int32_t *next = realloc(b->next, cap * sizeof *next);
	if (next)
		b->next = next;
	uint64_t *heap = realloc(b->heap, 3 * cap * sizeof *heap);
	if (heap)
		b->heap = heap;
	if (!sym || !prev || !next || !heap)
		return -1;
	b->scratch_cap = cap;
	return 0;
}

/* Pushes the pair starting at symbol i, if it has a merge. */
static inline void push_pair(const struct bpe *b, uint64_t *heap, size_t *nh, int32_t i)
{
	int32_t j = b->next[i];
	if (j < 0)
		return;
	const struct bpe_pair *p = find_pair(b, b->sym[i], b->sym[j]);
	if (p)
		heap_push(heap, nh, (uint64_t)p->rank << 32 | (uint32_t)i);
}

/* Runs the merges over s[0..n); the surviving symbols are linked from 0. */
static void merge_all(struct bpe *b, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		b->sym[i] = b->byte_id[s[i]];
		b->prev[i] = (int32_t)i - 1;
		b->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
	}
	size_t nh = 0;
	for (size_t i = 0; i + 1 < n; i++)
		push_pair(b, b->heap, &nh, (int32_t)i);
	while (nh) {
		uint64_t top = heap_pop(b->heap, &nh);
		int32_t i = (int32_t)(uint32_t)top;
		uint32_t rank = (uint32_t)(top >> 32);
		int32_t j = b->next[i];
		/* Stale entries: symbol i was absorbed (sym -1), or one side of
		 * the pair has changed since it was pushed. */
		if (b->sym[i] < 0 || j < 0)
			continue;
		const struct bpe_pair *p = find_pair(b, b->sym[i], b->sym[j]);
		if (!p || p->rank != rank)
			continue;
		b->sym[i] = p->merged;
		b->sym[j] = -1;
		b->next[i] = b->next[j];
		if (b->next[j] >= 0)
			b->prev[b->next[j]] = i;
		if (b->prev[i] >= 0)
			push_pair(b, b->heap, &nh, b->prev[i]);
		push_pair(b, b->heap, &nh, i);
	}
}

int bpe_encode(struct bpe *b, const unsigned char *s, size_t n, struct idvec *out,
	       struct err *e)
{
	if (n == 1)
		return idvec_push(out, b->byte_id[s[0]]) < 0 ? err_set(e, "out of memory") : 0;
	struct bpe_slot *sl = NULL;
	uint64_t h = 0;
	if (n <= CACHE_MAX_PIECE) {
		h = hash_piece(s, n);
		sl = cache_slot(b, h, s, n);
		if (sl->hash) {
			const int32_t *ids = (const int32_t *)(void *)
				(b->arena + sl->off + ((sl->nbytes + 3) & ~3u));
			for (size_t k = 0; k < sl->nids; k++)
				if (idvec_push(out, ids[k]) < 0)
					return err_set(e, "out of memory");
			return 0;
		}
	}
	if (grow_scratch(b, n) < 0)
		return err_set(e, "out of memory");
	merge_all(b, s, n);
	size_t first = out->n;
	for (int32_t i = 0; i >= 0; i = b->next[i])
		if (idvec_push(out, b->sym[i]) < 0)
			return err_set(e, "out of memory");
	if (sl)
		cache_put(b, sl, h, s, n, out->v + first, out->n - first);
	return 0;
}
