/* The drafter (lib/model/draft.h) against a scan of the whole sequence:
 * every proposal is the continuation of the latest earlier occurrence of
 * the sequence's last n ids for some n, the longest such n unless a hash
 * collision lost it (counted; the tables have 2 slots per id, so few are);
 * a period repeats through the proposal; draft_keep gives the drafter a
 * fresh one would be. */
#include "check.h"
#include "core/rng.h"
#include "model/draft.h"

#include <string.h>

enum { CAP = 600, K = 6, NGRAM = 3 };

/* The scan: the continuation (max ids, through the proposal) of the
 * latest occurrence of the last n ids ending before the last id, or 0. */
static int scan(const int32_t *s, int len, int n, int max, int32_t *out)
{
	static int32_t ext[CAP + K];  /* the sequence, then the proposal */
	for (int end = len - 2; end >= n - 1; end--) {
		int same = 1;
		for (int i = 0; i < n; i++)
			same &= s[end - i] == s[len - 1 - i];
		if (!same)
			continue;
		memcpy(ext, s, sizeof *s * (size_t)len);
		for (int i = 0; i < max; i++)
			ext[len + i] = ext[end + 1 + i];
		memcpy(out, ext + len, sizeof *out * (size_t)max);
		return max;
	}
	return 0;
}

int main(void)
{
	struct draft d, fresh;
	struct err e;
	CHECK(draft_init(&d, 0, CAP, &e) < 0, "n-gram 0 accepted");
	CHECK(draft_init(&d, NGRAM, CAP, &e) == 0, "draft_init: %s", e.msg);
	CHECK(draft_init(&fresh, NGRAM, CAP, &e) == 0, "draft_init: %s", e.msg);

	/* A period of 4: "1 2 3 4 1 2 3" proposes 4 1 2 3 4 1. */
	int32_t out[K], want[K];
	const int32_t period[] = { 1, 2, 3, 4, 1, 2, 3 };
	for (int i = 0; i < 7; i++)
		draft_push(&d, period[i]);
	const int32_t cycle[K] = { 4, 1, 2, 3, 4, 1 };
	CHECK(draft_propose(&d, K, out) == K && !memcmp(out, cycle, sizeof cycle),
	      "period: %d %d %d %d %d %d", out[0], out[1], out[2], out[3], out[4], out[5]);
	/* Nothing matches a new id. */
	draft_push(&d, 9);
	CHECK(draft_propose(&d, K, out) == 0, "a new id matched");

	/* A random sequence over a small alphabet, so that matches of every
	 * length come and go. */
	struct rng r;
	rng_seed(&r, 24);
	draft_keep(&d, 0);
	int32_t s[CAP];
	int longest = 0, lost = 0, wrong = 0;
	for (int len = 0; len < CAP; len++) {
		s[len] = (int32_t)(rng_next(&r) % 5);
		draft_push(&d, s[len]);
		int got = draft_propose(&d, K, out), best = 0, same = 0;
		for (int n = NGRAM; n >= 1; n--) {
			if (!scan(s, len + 1, n, K, want))
				continue;
			if (!best)
				best = n;
			if (got && !memcmp(out, want, sizeof want)) {
				same = n;
				break;
			}
		}
		if (got && !same)
			wrong++;
		else if (best && (!got || same != best))
			lost++;
		else if (got)
			longest++;
	}
	printf("test_draft: %d proposals from the longest match, %d lost to collisions\n",
	       longest, lost);
	CHECK(wrong == 0, "%d proposals that are no earlier continuation", wrong);
	CHECK(lost < CAP / 10 && longest > CAP / 2, "%d proposals from the longest "
	      "match, %d lost to collisions", longest, lost);

	/* draft_keep(n) is the drafter of the first n ids. */
	draft_keep(&d, 321);
	for (int i = 0; i < 321; i++)
		draft_push(&fresh, s[i]);
	int32_t o2[K];
	int a = draft_propose(&d, K, out), b = draft_propose(&fresh, K, o2);
	CHECK(d.n == 321 && a == b && !memcmp(out, o2, sizeof *out * (size_t)a),
	      "draft_keep: %d vs %d proposed", a, b);
	CHECK(memcmp(d.slots[2], fresh.slots[2], sizeof *d.slots[2] * (d.mask + 1)) == 0,
	      "draft_keep: another index than a fresh drafter's");
	draft_free(&d);
	draft_free(&fresh);
	return check_done("test_draft");
}
