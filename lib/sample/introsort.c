/* introsort: see introsort.h. Names follow libstdc++'s, so the two can be
 * read side by side; iterators are indices into a. */
#include "sample/introsort.h"

#include <math.h>

typedef struct introsort_item item;

enum { THRESHOLD = 16 }; /* _S_threshold */

/* KeyValueCompAsc: a before b. */
static int comp(item a, item b)
{
	return (!isnan(a.v) && isnan(b.v)) || a.v < b.v;
}

static void swap(item *a, long x, long y)
{
	item t = a[x];
	a[x] = a[y];
	a[y] = t;
}

static long lg(long n)
{
	long k = 0;
	while (n >>= 1)
		k++;
	return k;
}

/* std::__push_heap */
static void push_heap(item *a, long first, long hole, long top, item v)
{
	long parent = (hole - 1) / 2;
	while (hole > top && comp(a[first + parent], v)) {
		a[first + hole] = a[first + parent];
		hole = parent;
		parent = (hole - 1) / 2;
	}
	a[first + hole] = v;
}

/* std::__adjust_heap */
static void adjust_heap(item *a, long first, long hole, long len, item v)
{
	long top = hole, second = hole;
	while (second < (len - 1) / 2) {
		second = 2 * (second + 1);
		if (comp(a[first + second], a[first + second - 1]))
			second--;
		a[first + hole] = a[first + second];
		hole = second;
	}
	if ((len & 1) == 0 && second == (len - 2) / 2) {
		second = 2 * (second + 1);
		a[first + hole] = a[first + second - 1];
		hole = second - 1;
	}
	push_heap(a, first, hole, top, v);
}

/* std::__make_heap */
static void make_heap(item *a, long first, long last)
{
	long len = last - first;
	if (len < 2)
		return;
	for (long parent = (len - 2) / 2;; parent--) {
		adjust_heap(a, first, parent, len, a[first + parent]);
		if (parent == 0)
			return;
	}
}

/* std::__pop_heap */
static void pop_heap(item *a, long first, long last, long result)
{
	item v = a[result];
	a[result] = a[first];
	adjust_heap(a, first, 0, last - first, v);
}

/* std::__partial_sort(first, middle, last): heap select, then sort_heap. */
static void partial_sort(item *a, long first, long middle, long last)
{
	make_heap(a, first, middle);
	for (long i = middle; i < last; i++)
		if (comp(a[i], a[first]))
			pop_heap(a, first, middle, i);
	while (middle - first > 1) {
		middle--;
		pop_heap(a, first, middle, middle);
	}
}

/* std::__move_median_to_first */
static void move_median_to_first(item *a, long result, long x, long y, long z)
{
	if (comp(a[x], a[y])) {
		if (comp(a[y], a[z]))
			swap(a, result, y);
		else if (comp(a[x], a[z]))
			swap(a, result, z);
		else
			swap(a, result, x);
	} else if (comp(a[x], a[z])) {
		swap(a, result, x);
	} else if (comp(a[y], a[z])) {
		swap(a, result, z);
	} else {
		swap(a, result, y);
	}
}

/* std::__unguarded_partition */
static long unguarded_partition(item *a, long first, long last, long pivot)
{
	for (;;) {
		while (comp(a[first], a[pivot]))
			first++;
		last--;
		while (comp(a[pivot], a[last]))
			last--;
		if (!(first < last))
			return first;
		swap(a, first, last);
		first++;
	}
}

static void introsort_loop(item *a, long first, long last, long depth)
{
	while (last - first > THRESHOLD) {
		if (depth == 0) {
			partial_sort(a, first, last, last);
			return;
		}
		depth--;
		long mid = first + (last - first) / 2;
		move_median_to_first(a, first, first + 1, mid, last - 1);
		long cut = unguarded_partition(a, first + 1, last, first);
		introsort_loop(a, cut, last, depth);
		last = cut;
	}
}

/* std::__unguarded_linear_insert */
static void unguarded_linear_insert(item *a, long last)
{
	item v = a[last];
	long next = last - 1;
	while (comp(v, a[next])) {
		a[last] = a[next];
		last = next;
		next--;
	}
	a[last] = v;
}

/* std::__insertion_sort */
static void insertion_sort(item *a, long first, long last)
{
	if (first == last)
		return;
	for (long i = first + 1; i < last; i++) {
		if (comp(a[i], a[first])) {
			item v = a[i];
			for (long j = i; j > first; j--)
				a[j] = a[j - 1];
			a[first] = v;
		} else {
			unguarded_linear_insert(a, i);
		}
	}
}

void introsort(item *a, long n)
{
	if (n <= 0)
		return;
	introsort_loop(a, 0, n, 2 * lg(n));
	if (n > THRESHOLD) {
		insertion_sort(a, 0, THRESHOLD);
		for (long i = THRESHOLD; i < n; i++)
			unguarded_linear_insert(a, i);
	} else {
		insertion_sort(a, 0, n);
	}
}
