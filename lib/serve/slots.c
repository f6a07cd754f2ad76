/* slots: the contexts and the queue (slots.h). */
#include "serve/slots.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int slots_init(struct slots *ss, int n, int max_wait, char *const *argv, struct err *e)
{
	*ss = (struct slots){ .n = n, .max_wait = max_wait };
	ss->v = calloc((size_t)n, sizeof *ss->v);
	ss->busy = calloc((size_t)n, sizeof *ss->busy);
	if (!ss->v || !ss->busy) {
		free(ss->v);
		free(ss->busy);
		return err_set(e, "out of memory");
	}
	for (int i = 0; i < n; i++)
		if (slot_start(&ss->v[i], argv, e) < 0) {
			while (i-- > 0)
				slot_stop(&ss->v[i]);
			free(ss->v);
			free(ss->busy);
			return -1;
		}
	pthread_mutex_init(&ss->mu, NULL);
	/* waits time out on the monotonic clock, which a change of the date
	 * does not move */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ss->freed, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void slots_free(struct slots *ss)
{
	for (int i = 0; i < ss->n; i++)
		slot_stop(&ss->v[i]);
	free(ss->v);
	free(ss->busy);
	pthread_mutex_destroy(&ss->mu);
	pthread_cond_destroy(&ss->freed);
}

/* The free slot sharing the longest prefix with ids (the first on ties),
 * or -1. */
static int best_free(const struct slots *ss, const int32_t *ids, int n)
{
	int best = -1, best_k = -1;
	for (int i = 0; i < ss->n; i++) {
		if (ss->busy[i])
			continue;
		int k = slot_common(&ss->v[i], ids, n);
		if (k > best_k)
			best = i, best_k = k;
	}
	return best;
}

int slots_acquire(struct slots *ss, const int32_t *ids, int n, slots_gone_fn *gone, void *arg,
		  struct slot **out)
{
	pthread_mutex_lock(&ss->mu);
	int i = best_free(ss, ids, n);
	if (i < 0) {
		if (ss->waiting >= ss->max_wait) {
			pthread_mutex_unlock(&ss->mu);
			return SLOTS_FULL;
		}
		ss->waiting++;
		while ((i = best_free(ss, ids, n)) < 0) {
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			t.tv_nsec += SLOTS_POLL_MS * 1000000L;
			t.tv_sec += t.tv_nsec / 1000000000L;
			t.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&ss->freed, &ss->mu, &t);
			if (best_free(ss, ids, n) < 0 && gone(arg)) {
				ss->waiting--;
				pthread_mutex_unlock(&ss->mu);
				return SLOTS_GONE;
			}
		}
		ss->waiting--;
	}
	ss->busy[i] = 1;
	pthread_mutex_unlock(&ss->mu);
	*out = &ss->v[i];
	return 0;
}

void slots_release(struct slots *ss, struct slot *sl)
{
	pthread_mutex_lock(&ss->mu);
	ss->busy[sl - ss->v] = 0;
	pthread_cond_signal(&ss->freed);
	pthread_mutex_unlock(&ss->mu);
}

void slots_count(struct slots *ss, int *busy, int *waiting)
{
	pthread_mutex_lock(&ss->mu);
	*busy = 0;
	for (int i = 0; i < ss->n; i++)
		*busy += ss->busy[i];
	*waiting = ss->waiting;
	pthread_mutex_unlock(&ss->mu);
}

void slots_end(struct slots *ss)
{
	for (int i = 0; i < ss->n; i++) {
		pid_t pid = ss->v[i].pid;
		if (pid <= 0)
			continue;
		kill(pid, SIGTERM);
		/* 2 s to end (and remove its FIFO), then SIGKILL */
		for (int t = 0; t < 200 && waitpid(pid, NULL, WNOHANG) == 0; t++)
			usleep(10000);
		if (kill(pid, SIGKILL) == 0)
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
	}
}
