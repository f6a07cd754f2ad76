/* pool: one persistent set of worker threads, created once (at model load)
 * and reused by every parallel step; no thread is created per call.
 *
 * pool_run(p, fn, arg) calls fn(arg, i, n) once for each i in [0, n), n the
 * pool's thread count, i = 0 on the calling thread, and returns when all
 * have returned. Between runs workers sleep on a condition variable, and
 * the caller sleeps while it waits for them: they never spin, unless
 * pool_set_spin asks them to spin for a while first (a decode step is
 * about 120 runs a few microseconds apart; whether spinning pays depends on
 * whether the cores are shared: measured by `bench --spin`, README).
 *
 * Determinism is the caller's part: split work by output (pool_split), so
 * each output element is computed by one thread in an order that does not
 * depend on n.
 */
#ifndef POOL_H
#define POOL_H

#include "err.h"

struct pool;

typedef void pool_fn(void *arg, int i, int n);

/* Creates a pool of n_threads (>= 1; the caller counts as one, so n - 1
 * threads are started). The caller frees it with pool_destroy. */
struct pool *pool_create(int n_threads, struct err *e);

int pool_threads(const struct pool *p);

void pool_run(struct pool *p, pool_fn *fn, void *arg);

/* From now on a waiting thread (a worker between runs, the caller waiting
 * for the workers) spins for up to us microseconds before it sleeps; 0
 * (the default) never spins. Results do not depend on it. */
void pool_set_spin(struct pool *p, int us);

/* Stops and joins the workers, frees p. NULL is fine. */
void pool_destroy(struct pool *p);

/* Part i of n of [0, len), in whole multiples of align (the last part takes
 * the remainder): [*lo, *hi). */
void pool_split(int len, int i, int n, int align, int *lo, int *hi);

#endif
