/* check.h: the tiny harness of the C tests (tests/c/test_*.c).
 *
 * CHECK(cond, fmt, ...) counts a failure and prints it without stopping, so
 * one run shows every disagreement; check_done() prints "N passed, N failed"
 * and returns the exit status. Numeric comparisons report the largest
 * difference they saw, whether or not it passed.
 *
 * The numerics programs take the machine's SIMD level from cpu_level_env()
 * (QWENPIPE_SIMD caps it), not cpu_detect(), so that one machine can run
 * them as a machine with fewer features would: scripts/numerics-matrix runs
 * them under each level and each OPENBLAS_CORETYPE (docs/testing.md).
 */
#ifndef CHECK_H
#define CHECK_H

#include "core/slurp.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

/* All of a file the test needs (golden data, fixtures), or exit 1 naming
 * it: without its inputs a test has nothing to check. */
static inline char *check_slurp(const char *path, size_t *len)
{
	struct err e;
	size_t n;
	char *s = slurp(path, len ? len : &n, &e);
	if (!s) {
		fprintf(stderr, "%s\n", e.msg);
		exit(1);
	}
	return s;
}

/* The "ids" array of a golden JSON case (tests/golden/). */
static inline int *check_golden_ids(const char *path, int *n)
{
	char *text = check_slurp(path, NULL);
	cJSON *j = cJSON_Parse(text);
	const cJSON *a = cJSON_GetObjectItem(j, "ids");
	if (!cJSON_IsArray(a)) {
		fprintf(stderr, "%s: no \"ids\" array\n", path);
		exit(1);
	}
	*n = cJSON_GetArraySize(a);
	int *ids = malloc(sizeof(int) * (size_t)(*n + 1));
	for (int i = 0; i < *n; i++)
		ids[i] = cJSON_GetArrayItem(a, i)->valueint;
	cJSON_Delete(j);
	free(text);
	return ids;
}

#endif
