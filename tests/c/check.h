/* check.h: the tiny harness of the C tests (tests/c/test_*.c).
 *
 * CHECK(cond, fmt, ...) counts a failure and prints it without stopping, so
 * one run shows every disagreement; check_done() prints "N passed, N failed"
 * and returns the exit status. Numeric comparisons report the largest
 * difference they saw, whether or not it passed.
 */
#ifndef CHECK_H
#define CHECK_H

#include <math.h>
#include <stdio.h>

static int check_pass, check_fail;

#define CHECK(cond, ...) do { \
	if (cond) { check_pass++; } else { \
		check_fail++; \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
	} } while (0)

/* Largest |a[i] - b[i]| over n floats; *where gets its index. */
static inline double check_max_abs(const float *a, const float *b, long n, long *where)
{
	double m = 0;
	long w = 0;
	for (long i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]);
		if (d > m || d != d) {
			m = d;
			w = i;
			if (d != d)
				break;
		}
	}
	if (where)
		*where = w;
	return m;
}

static inline int check_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_pass, check_fail);
	return check_fail ? 1 : 0;
}

#endif
