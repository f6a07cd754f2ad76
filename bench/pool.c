/* bench/pool: what one dispatch of the thread pool costs (an empty
 * pool_run on 2 threads: wake the worker, run nothing, wait for it), in
 * microseconds, best of 5 rounds of 2,000. A forward pass of Qwen2.5-0.5B
 * makes about 120 dispatches per token. Asserts nothing; one JSON line.
 *
 *   make bench  or  build/bench/pool
 */
#include "harness/benchrun.h"
#include "core/pool.h"
#include "core/timing.h"

#include <stdio.h>

enum { ROUNDS = 5, CALLS = 2000 };

static void nothing(void *arg, int i, int n)
{
	(void)arg;
	(void)i;
	(void)n;
}

int main(void)
{
	struct err e;
	struct pool *p = pool_new(2, &e);
	if (!p) {
		fprintf(stderr, "bench/pool: %s\n", e.msg);
		return 1;
	}
	double best = 1e9;
	for (int r = 0; r < ROUNDS; r++) {
		double t = time_now();
		for (int i = 0; i < CALLS; i++)
			pool_run(p, nothing, NULL);
		double dt = (time_now() - t) / CALLS;
		best = dt < best ? dt : best;
	}
	pool_free(p);
	double load = bench_loadavg();
	printf("{\"bench\": \"pool\", \"threads\": 2, \"load1\": %.2f, "
	       "\"dispatch_us_best\": %.2f}\n", load, best * 1e6);
	return 0;
}
