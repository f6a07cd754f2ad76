/* cleanup: the temporary paths a tool must not leave behind.
 *
 * A tool that creates something temporary (a file renamed into place when
 * complete, forward's FIFO and its directory) registers its path here.
 * The paths still registered are removed when the process exits (cli_die()
 * included) and on SIGINT, SIGTERM, SIGHUP and SIGPIPE, after which the
 * process dies of the same signal, so the shell sees the usual status
 * (SIGPIPE stays ignored if the tool ignores it before the first
 * cleanup_hold).
 * Files go first, then directories, which are removed if that left them
 * empty.
 *
 * Between creating a path and registering it there must be no moment a
 * signal could fall into: create it between cleanup_hold() and
 * cleanup_release(), which block those signals in the calling thread. A
 * signal that the kernel hands to another thread meanwhile (OpenBLAS starts
 * its threads before main) is passed on to the thread that registers, and
 * waits there until cleanup_release().
 *
 * One thread registers (the main one); the handler uses only
 * async-signal-safe calls.
 */
#ifndef CLEANUP_H
#define CLEANUP_H

enum { CLEANUP_MAX = 8 };

/* Blocks the signals above in the calling thread, and installs the handler
 * the first time. */
void cleanup_hold(void);

/* Unblocks them: one that came meanwhile is handled now. */
void cleanup_release(void);

/* Registers path (copied; at most PATH_MAX bytes). Returns 0, or -1 when
 * CLEANUP_MAX paths are registered already. */
int cleanup_add(const char *path);

/* Forgets path: it has been removed, or renamed into place. */
void cleanup_drop(const char *path);

#endif
