/* test_pool: every run calls each part exactly once and returns only after
 * all of them, whether the next run comes at once (caught while polling) or
 * after the threads went to sleep; pool_split covers a range exactly. */
#include "check.h"
#include "core/pool.h"

#include <stdatomic.h>
#include <time.h>

enum { RUNS = 2000, MAXN = 4 };

struct job {
	int run;
	atomic_int calls[MAXN];
	int last_run[MAXN];
	atomic_int bad;
};

static void part(void *arg, int i, int n)
{
	struct job *j = arg;
	if (i < 0 || i >= n || n > MAXN) {
		atomic_fetch_add(&j->bad, 1);
		return;
	}
	atomic_fetch_add(&j->calls[i], 1);
	j->last_run[i] = j->run;  /* read back by the caller after pool_run */
}

int main(void)
{
	struct err e;
	for (int n = 1; n <= MAXN; n++)
		for (int pause = 0; pause <= 1; pause++) {
			struct pool *p = pool_new(n, &e);
			CHECK(p && pool_threads(p) == n, "pool_new(%d)", n);
			if (!p)
				continue;
			struct job j = { 0 };
			int stale = 0;
			for (int r = 0; r < RUNS; r++) {
				j.run = r;
				/* Every 100th run after a pause long enough that the
				 * workers stop polling and sleep. */
				if (pause && r % 100 == 0)
					nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
				pool_run(p, part, &j);
				/* Every part of this run has returned. */
				for (int i = 0; i < n; i++)
					stale += j.last_run[i] != r;
			}
			int wrong = 0;
			for (int i = 0; i < n; i++)
				wrong += atomic_load(&j.calls[i]) != RUNS;
			CHECK(!wrong && !stale && !atomic_load(&j.bad),
			      "%d threads, pauses %d: %d parts with a wrong count, %d returned "
			      "before their part ran", n, pause, wrong, stale);
			pool_free(p);
		}
	CHECK(pool_new(0, &e) == NULL, "pool_new(0) fails");

	/* pool_split: parts in order, aligned, covering [0, len) once. */
	int lens[] = { 0, 1, 15, 16, 17, 151936, 4864 };
	for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
		for (int n = 1; n <= 3; n++) {
			int at = 0, ok = 1;
			for (int i = 0; i < n; i++) {
				int lo, hi;
				pool_split(lens[l], i, n, 16, &lo, &hi);
				ok &= lo == at && hi >= lo && (lo % 16 == 0 || lo == lens[l]);
				at = hi;
			}
			CHECK(ok && at == lens[l], "pool_split(%d, n=%d)", lens[l], n);
		}
	return check_done("pool");
}
