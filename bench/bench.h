/* bench.h: what the benchmark programs in bench/ share. Each prints one
 * JSON line that starts with bench_open() and ends with "}\n". */
#ifndef BENCH_H
#define BENCH_H

#include <stdio.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Prints {"bench": NAME, "date": ..., "load1": ... (no closing brace): the
 * machine is shared, so its load goes with every figure. */
static inline void bench_open(const char *name)
{
	double load = -1;
	FILE *la = fopen("/proc/loadavg", "r");
	if (la) {
		if (fscanf(la, "%lf", &load) != 1)
			load = -1;
		fclose(la);
	}
	char date[32];
	time_t t = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	printf("{\"bench\": \"%s\", \"date\": \"%s\", \"load1\": %.2f", name, date, load);
}

#endif
