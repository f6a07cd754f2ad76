/* membw: see membw.h. */
#include "harness/membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/cpu.h"
#include "core/mapfile.h"
#include "core/pool.h"
#include "core/timing.h"
#include "kernels/prefetch.h"

#define PAGE 4096

static unsigned long long sum_scalar(const void *p, size_t n)
{
	const uint64_t *w = p;
	uint64_t s[8] = { 0 };
	for (size_t i = 0; i + 8 <= n / 8; i += 8)
		for (int j = 0; j < 8; j++)
			s[j] += w[i + j];
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

struct job {
	const unsigned char *buf;
	size_t pages;
	int avx2, prefetch;
	volatile unsigned long long sink[64];
};

static void part(void *arg, int i, int n)
{
	struct job *j = arg;
	int lo, hi;
	pool_split((int)j->pages, i, n, 1, &lo, &hi);
	const unsigned char *p = j->buf + (size_t)lo * PAGE;
	size_t len = (size_t)(hi - lo) * PAGE;
	j->sink[i % 64] = j->avx2 ? membw_sum_avx2(p, len, j->prefetch) : sum_scalar(p, len);
}

int membw_measure(struct membw *r, int threads, size_t bytes, int reps, struct err *e)
{
	prefetch_tune();  /* the page requests as the kernels make them */
	if (threads < 1 || reps < 1)
		return err_set(e, "membw: bad arguments (%d threads, %d passes)", threads,
			       reps);
	size_t pages = bytes / PAGE;
	if (pages < (size_t)threads)
		pages = (size_t)threads;
	if (pages > INT32_MAX)
		return err_set(e, "membw: buffer of %zu bytes is too large", bytes);
	double *gbs = malloc(sizeof *gbs * (size_t)reps);
	struct job *j = calloc(1, sizeof *j);
	unsigned char *buf = anon_alloc(pages * PAGE);  /* as the weights are held */
	struct pool *p = gbs && j && buf ? pool_new(threads, e) : NULL;
	if (!p) {
		free(gbs);
		free(j);
		if (buf)
			munmap(buf, pages * PAGE);
		return gbs && j && buf ? -1 : err_set(e, "membw: out of memory for %zu bytes",
						       pages * PAGE);
	}
	memset(buf, 1, pages * PAGE);  /* every page faulted in, not the zero page */
	j->buf = buf;
	j->pages = pages;
	j->avx2 = cpu_detect() >= CPU_AVX2;
	pool_run(p, part, j);  /* warm-up: the threads are up and scheduled */
	for (int i = 0; i < reps; i++) {
		j->prefetch = i % 2;
		double t0 = time_now();
		pool_run(p, part, j);
		gbs[i] = (double)(pages * PAGE) / (time_now() - t0) / 1e9;
	}
	struct spread s = spread_of(gbs, reps);
	*r = (struct membw){ .threads = threads, .bytes = pages * PAGE, .reps = reps,
			     .gbs = s };
	pool_free(p);
	munmap(buf, pages * PAGE);
	free(j);
	free(gbs);
	return 0;
}
