/* pool: one persistent set of worker threads, created once (at model load)
 * and reused by every parallel step; no thread is created per call.
 *
 * pool_run(p, fn, arg) calls fn(arg, i, n) once for each i in [0, n), n the
 * pool's thread count, i = 0 on the calling thread, and returns when all
 * have returned. Waiting threads poll for about 30 us (pause, then
 * sched_yield) and then sleep on a condition variable: the steps of a pass
 * are caught while polling, and between tokens nothing spins (the cores may
 * be shared, and OpenBLAS may own them during a GEMM).
 *
 * Determinism is the caller's part: split work by output (pool_split), so
 * each output element is computed by one thread in an order that does not
 * depend on n.
 */
#ifndef POOL_H
#define POOL_H

#include "core/err.h"

struct pool;

typedef void pool_fn(void *arg, int i, int n);

/* Creates a pool of n_threads (>= 1; the caller counts as one, so n - 1
 * threads are started). The caller frees it with pool_free. */
struct pool *pool_new(int n_threads, struct err *e);

int pool_threads(const struct pool *p);

void pool_run(struct pool *p, pool_fn *fn, void *arg);

/* Stops and joins the workers, frees p. NULL is fine. */
void pool_free(struct pool *p);

/* Part i of n of [0, len): whole units of align elements spread as evenly
 * as possible (only the last unit may be short), as [*lo, *hi). */
void pool_split(int len, int i, int n, int align, int *lo, int *hi);

#endif
