/* pool: see pool.h. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct pool {
	int n;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	unsigned long gen;  /* bumped for each run */
	int pending;        /* workers still running the current job */
	int stop;
	pool_fn *fn;
	void *arg;
};

struct start {
	struct pool *p;
	int i;
};

static void *worker(void *v)
{
	struct start *s = v;
	struct pool *p = s->p;
	int i = s->i;
	free(s);
	unsigned long seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->stop)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stop)
			break;
		seen = p->gen;
		pool_fn *fn = p->fn;
		void *arg = p->arg;
		pthread_mutex_unlock(&p->mu);
		fn(arg, i, p->n);
		pthread_mutex_lock(&p->mu);
		if (--p->pending == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
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
	p->pending = p->n - 1;
	p->gen++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	fn(arg, 0, p->n);
	pthread_mutex_lock(&p->mu);
	while (p->pending > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void pool_destroy(struct pool *p)
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
