/* pool: see pool.h. */
#include "core/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* How a thread waits for the next job (or for the workers to finish): it
 * polls SPIN times, with a pause for the first SPIN_PAUSE rounds and a
 * sched_yield after that (so a spinning thread hands its core to our other
 * thread when the machine is oversubscribed), then sleeps on the
 * condition variable. The steps of a forward pass follow each
 * other within microseconds, so the next job is usually caught while
 * polling; between tokens threads sleep and take no CPU from anyone. Pause
 * only (SPIN_PAUSE = SPIN) let a spinning thread starve the other. The
 * measurements behind both numbers, with their command (build/bench/pool),
 * are in docs/performance.md ("The forward pass"). */
#define SPIN 1000
#define SPIN_PAUSE 200

struct pool {
	int n;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	atomic_ulong gen;     /* bumped (release) for each run, after fn and arg */
	atomic_int pending;   /* workers still running the current job */
	int stop;             /* under mu */
	pool_fn *fn;
	void *arg;
};

struct start {
	struct pool *p;
	int i;
};

static inline void relax(int round)
{
	if (round < SPIN_PAUSE)
		__builtin_ia32_pause();
	else
		sched_yield();
}

/* Waits for a job newer than seen; returns its generation, or 0 to stop. */
static unsigned long next_job(struct pool *p, unsigned long seen)
{
	for (int s = 0; s < SPIN; s++) {
		unsigned long g = atomic_load_explicit(&p->gen, memory_order_acquire);
		if (g != seen)
			return g;
		relax(s);
	}
	pthread_mutex_lock(&p->mu);
	unsigned long g;
	while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen && !p->stop)
		pthread_cond_wait(&p->work, &p->mu);
	int stop = p->stop;
	pthread_mutex_unlock(&p->mu);
	return stop ? 0 : g;
}

static void *worker(void *v)
{
	struct start *s = v;
	struct pool *p = s->p;
	int i = s->i;
	free(s);
	unsigned long seen = 0;
	while ((seen = next_job(p, seen)) != 0) {
		p->fn(p->arg, i, p->n);
		if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

struct pool *pool_new(int n_threads, struct err *e)
{
	struct pool *p = calloc(1, sizeof *p);
	if (!p || n_threads < 1) {
		free(p);
		err_set(e, n_threads < 1 ? "bad thread count %d" : "out of memory",
			n_threads);
		return NULL;
	}
	p->n = n_threads;
	p->threads = calloc((size_t)n_threads, sizeof *p->threads);
	if (!p->threads) {
		free(p);
		err_set(e, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	for (int i = 1; i < n_threads; i++) {
		struct start *s = malloc(sizeof *s);
		int rc = s ? 0 : -1;
		if (s) {
			*s = (struct start){ .p = p, .i = i };
			rc = pthread_create(&p->threads[i], NULL, worker, s);
			if (rc)
				free(s);
		}
		if (rc) {
			p->n = i;  /* join the ones that started */
			pool_free(p);
			err_set(e, "cannot start thread %d of %d: %s", i + 1, n_threads,
				rc > 0 ? strerror(rc) : "out of memory");
			return NULL;
		}
	}
	return p;
}

int pool_threads(const struct pool *p)
{
	return p->n;
}

void pool_run(struct pool *p, pool_fn *fn, void *arg)
{
	if (p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->arg = arg;
	atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	fn(arg, 0, p->n);
	for (int s = 0; s < SPIN; s++) {
		if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0)
			return;
		relax(s);
	}
	pthread_mutex_lock(&p->mu);
	while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	free(p->threads);
	free(p);
}

void pool_split(int len, int i, int n, int align, int *lo, int *hi)
{
	int units = (len + align - 1) / align;
	int per = units / n, extra = units % n;
	int u0 = i * per + (i < extra ? i : extra);
	int u1 = u0 + per + (i < extra);
	*lo = u0 * align < len ? u0 * align : len;
	*hi = u1 * align < len ? u1 * align : len;
}
