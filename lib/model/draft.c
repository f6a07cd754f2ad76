/* draft: see draft.h. */
#include "model/draft.h"

#include <stdlib.h>
#include <string.h>

enum { TABLE_MAX = 1 << 20 };  /* slots per n */

/* The hash of ids[0..n). */
static uint32_t hash(const int32_t *ids, int n)
{
	uint32_t h = 2166136261u ^ (uint32_t)n;
	for (int i = 0; i < n; i++) {
		h ^= (uint32_t)ids[i];
		h *= 0x9e3779b1u;
		h ^= h >> 15;
	}
	return h;
}

int draft_init(struct draft *d, int ngram, int cap, struct err *e)
{
	memset(d, 0, sizeof *d);
	if (ngram < 1 || ngram > DRAFT_NGRAM_MAX || cap < 1)
		return err_set(e, "draft: n-gram %d (1..%d), capacity %d", ngram,
			       DRAFT_NGRAM_MAX, cap);
	uint32_t size = 1;
	while (size < 2u * (uint32_t)cap && size < TABLE_MAX)
		size <<= 1;
	d->ngram = ngram;
	d->cap = cap;
	d->mask = size - 1;
	d->ids = malloc(sizeof *d->ids * (size_t)cap);
	int ok = d->ids != NULL;
	for (int i = 0; i < ngram && ok; i++)
		ok = (d->slots[i] = malloc(sizeof *d->slots[i] * size)) != NULL;
	if (!ok) {
		draft_free(d);
		return err_set(e, "out of memory");
	}
	draft_keep(d, 0);
	return 0;
}

void draft_free(struct draft *d)
{
	free(d->ids);
	for (int i = 0; i < DRAFT_NGRAM_MAX; i++)
		free(d->slots[i]);
	memset(d, 0, sizeof *d);
}

/* Indexes the n-grams that end at position d->n - 2, now followed. */
static void index_last(struct draft *d)
{
	int end = d->n - 2;
	for (int n = 1; n <= d->ngram && end - n + 1 >= 0; n++)
		d->slots[n - 1][hash(d->ids + end - n + 1, n) & d->mask] = end;
}

void draft_push(struct draft *d, int32_t id)
{
	d->ids[d->n++] = id;
	index_last(d);
}

void draft_keep(struct draft *d, int n)
{
	for (int i = 0; i < d->ngram; i++)
		memset(d->slots[i], 0xff, sizeof *d->slots[i] * (d->mask + 1));
	for (d->n = 0; d->n < n;) {
		d->n++;
		index_last(d);
	}
}

int draft_propose(const struct draft *d, int max, int32_t *out)
{
	const int32_t *s = d->ids;
	int len = d->n;
	for (int n = d->ngram < len ? d->ngram : len - 1; n >= 1; n--) {
		const int32_t *tail = s + len - n;
		int32_t end = d->slots[n - 1][hash(tail, n) & d->mask];
		if (end < n - 1 || end >= len - 1 ||
		    memcmp(s + end - n + 1, tail, sizeof *s * (size_t)n) != 0)
			continue;
		/* The sequence, then the proposal, continues from end + 1. */
		for (int i = 0; i < max; i++) {
			int at = end + 1 + i;
			out[i] = at < len ? s[at] : out[at - len];
		}
		return max;
	}
	return 0;
}
