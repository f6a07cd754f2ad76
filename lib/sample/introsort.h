/* introsort: libstdc++'s std::sort, step for step, on (value, index) pairs.
 *
 * Why a port of one library's sort: torch.sort on the CPU (stable=False)
 * is std::sort over (value, index) pairs compared by value alone, and
 * transformers' top-p sorts the logits with it. Where several equal logits
 * straddle the top-p cut, which of them are kept is decided by where that
 * algorithm happens to leave them, and the reference outputs
 * (tests/golden/sampler-warpers.jsonl) record exactly that. The sampler uses
 * this only in that rare case; everywhere else it never sorts the vocabulary.
 *
 * The algorithm (GCC's bits/stl_algo.h, unchanged for many releases):
 * introsort loop with depth limit 2 floor(log2 n): median of (first + 1,
 * middle, last - 1) moved to first, unguarded Hoare partition, recurse on the
 * right part, loop on the left; parts of 16 or fewer are left for a final
 * insertion sort (guarded on the first 16, unguarded after); at the depth
 * limit, heapsort (std::__partial_sort). Order: ascending, NaN last
 * (torch's KeyValueCompAsc).
 */
#ifndef INTROSORT_H
#define INTROSORT_H

#include <stdint.h>

struct introsort_item {
	float v;
	int32_t i;
};

/* Sorts a[0..n) in place as std::sort(a, a + n, KeyValueCompAsc) does. */
void introsort(struct introsort_item *a, long n);

#endif
