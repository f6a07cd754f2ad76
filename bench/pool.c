/* bench/pool: what one dispatch of the thread pool costs (an empty
 * pool_run on 2 threads: wake the worker, run nothing, wait for it), in
 * microseconds, best of 5 rounds of 2,000. A forward pass of Qwen2.5-0.5B
 * makes about 120 dispatches per token. Asserts nothing; one JSON line.
 *
 *   make bench  or  build/bench/pool
 */
#include "pool.h"

#include <stdio.h>
#include <time.h>

enum { ROUNDS = 5, CALLS = 2000 };

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nothing(void *arg, int i, int n)
{
	(void)arg;
	(void)i;
	(void)n;
}

int main(void)
{
	struct err e;
	struct pool *p = pool_create(2, &e);
	if (!p) {
		fprintf(stderr, "bench/pool: %s\n", e.msg);
		return 1;
	}
	double best = 1e9;
	for (int r = 0; r < ROUNDS; r++) {
		double t = now();
		for (int i = 0; i < CALLS; i++)
			pool_run(p, nothing, NULL);
		double dt = (now() - t) / CALLS;
		best = dt < best ? dt : best;
	}
	pool_destroy(p);
	double load = -1;
	FILE *la = fopen("/proc/loadavg", "r");
	if (la) {
		if (fscanf(la, "%lf", &load) != 1)
			load = -1;
		fclose(la);
	}
	printf("{\"bench\": \"pool\", \"threads\": 2, \"load1\": %.2f, "
	       "\"dispatch_us_best\": %.2f}\n", load, best * 1e6);
	return 0;
}
