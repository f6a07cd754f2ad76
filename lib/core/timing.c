/* timing: see timing.h. */
#include "core/timing.h"

#include <stdlib.h>
#include <time.h>

double time_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct spread spread_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return (struct spread){ .median = med, .min = v[0], .max = v[n - 1] };
}
