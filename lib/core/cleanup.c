/* cleanup: see cleanup.h. */
#include "core/cleanup.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };

static struct {
	char path[PATH_MAX];
	volatile sig_atomic_t live;  /* set after path is complete */
} slots[CLEANUP_MAX];
static pthread_t owner;
static int installed;

/* Removes every live path: the files first, then the directories (unlink
 * fails on those), which are then empty if they held only what was
 * registered. */
static void remove_all(void)
{
	for (int i = 0; i < CLEANUP_MAX; i++)
		if (slots[i].live && unlink(slots[i].path) == 0)
			slots[i].live = 0;
	for (int i = 0; i < CLEANUP_MAX; i++)
		if (slots[i].live) {
			rmdir(slots[i].path);
			slots[i].live = 0;
		}
}

static void on_signal(int sig)
{
	if (!pthread_equal(pthread_self(), owner)) {
		pthread_kill(owner, sig);  /* where cleanup_hold may be holding it */
		return;
	}
	remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

static sigset_t held(void)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaddset(&set, sigs[i]);
	return set;
}

void cleanup_hold(void)
{
	sigset_t set = held();
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (installed)
		return;
	installed = 1;
	owner = pthread_self();
	struct sigaction sa = { .sa_handler = on_signal }, old;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		/* SIGPIPE, when the tool ignores it (sample: it handles EPIPE),
		 * stays ignored */
		if (sigs[i] != SIGPIPE || (sigaction(sigs[i], NULL, &old) == 0 &&
					   old.sa_handler != SIG_IGN))
			sigaction(sigs[i], &sa, NULL);
	atexit(remove_all);
}

void cleanup_release(void)
{
	sigset_t set = held();
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int cleanup_add(const char *path)
{
	if (strlen(path) >= PATH_MAX)
		return -1;
	for (int i = 0; i < CLEANUP_MAX; i++)
		if (!slots[i].live) {
			strcpy(slots[i].path, path);
			slots[i].live = 1;
			return 0;
		}
	return -1;
}

void cleanup_drop(const char *path)
{
	for (int i = 0; i < CLEANUP_MAX; i++)
		if (slots[i].live && !strcmp(slots[i].path, path))
			slots[i].live = 0;
}
