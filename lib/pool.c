/* pool: see pool.h. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "timing.h"

struct pool {
	int n;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	atomic_ulong gen;     /* bumped for each run, after fn and arg are set */
	atomic_int pending;   /* workers still running the current job */
	atomic_int sleepers;  /* workers blocked (or about to block) on work */
	atomic_int waiting;   /* the caller is blocked (or about to) on done */
	atomic_int stop;
	atomic_int spin_us;   /* pool_set_spin */
	pool_fn *fn;
	void *arg;
};

struct start {
	struct pool *p;
	int i;
};

/* One turn of a spin loop (turn counts from 0): true at once when the
 * pool does not spin; else a pause, and every 64 turns a look at the
 * clock, true once spin_us have passed since the first look. */
static int spun_out(struct pool *p, int turn, double *t0)
{
	int us = atomic_load_explicit(&p->spin_us, memory_order_relaxed);
	if (us == 0)
		return 1;
	__builtin_ia32_pause();
	if (turn % 64 != 63)
		return 0;
	double t = time_now();
	if (*t0 == 0)
		*t0 = t;
	return t - *t0 > us * 1e-6;
}

static void *worker(void *v)
{
	struct start *s = v;
	struct pool *p = s->p;
	int i = s->i;
	free(s);
	unsigned long seen = 0;
	for (;;) {
		double t0 = 0;
		for (int k = 0; atomic_load(&p->gen) == seen && !spun_out(p, k, &t0); k++)
			;
		if (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) {
			/* Sleep. The caller bumps gen, then looks at sleepers
			 * (both sequentially consistent): either it sees this
			 * worker counted and broadcasts under the mutex, or this
			 * worker sees the new gen here and does not wait. */
			pthread_mutex_lock(&p->mu);
			atomic_fetch_add(&p->sleepers, 1);
			while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
				pthread_cond_wait(&p->work, &p->mu);
			atomic_fetch_sub(&p->sleepers, 1);
			pthread_mutex_unlock(&p->mu);
		}
		if (atomic_load(&p->stop))
			break;
		seen = atomic_load(&p->gen);
		p->fn(p->arg, i, p->n);
		/* The last one out wakes the caller if it went to sleep (the
		 * same handshake as above, on waiting and pending). */
		if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->waiting)) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

struct pool *pool_create(int n_threads, struct err *e)
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
			*s = (struct start){ p, i };
			rc = pthread_create(&p->threads[i], NULL, worker, s);
			if (rc)
				free(s);
		}
		if (rc) {
			p->n = i;  /* join the ones that started */
			pool_destroy(p);
			err_set(e, "cannot start thread %d of %d: %s", i + 1, n_threads,
				rc > 0 ? strerror(rc) : "out of memory");
			return NULL;
		}
	}
	return p;
}

void pool_set_spin(struct pool *p, int us)
{
	atomic_store(&p->spin_us, us < 0 ? 0 : us);
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
	p->fn = fn;
	p->arg = arg;
	atomic_store(&p->pending, p->n - 1);
	atomic_fetch_add(&p->gen, 1);
	if (atomic_load(&p->sleepers) > 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->work);
		pthread_mutex_unlock(&p->mu);
	}
	fn(arg, 0, p->n);
	double t0 = 0;
	for (int k = 0; atomic_load(&p->pending) > 0 && !spun_out(p, k, &t0); k++)
		;
	if (atomic_load(&p->pending) > 0) {
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->waiting, 1);
		while (atomic_load(&p->pending) > 0)
			pthread_cond_wait(&p->done, &p->mu);
		atomic_store(&p->waiting, 0);
		pthread_mutex_unlock(&p->mu);
	}
}

void pool_destroy(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, 1);
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
