/* feedback: the FIFO that closes the generation loop.
 *
 * `forward` cannot compute step t+1 before `sample` has drawn token t, and a
 * pipe only flows one way, so `forward` creates a FIFO in a private
 * directory (mkdtemp under $TMPDIR, default /tmp), names it in the logits
 * stream header, and reads ids from it; `sample` opens the path from the
 * header and writes each id it draws as a decimal line ("42\n"). The sampler
 * closing the FIFO (end of sequence, -n reached, its stdout gone, killed)
 * is EOF for `forward`: that generation is over, and forward writes the
 * stream's end record and reads its next prompt. Each generation has a
 * FIFO of its own (the sampler removes the name once it is connected).
 *
 * No deadlock, no leftovers:
 *  - the read end is opened non-blocking, so `forward` never blocks in
 *    open() waiting for a sampler that will never come;
 *  - while waiting for an id, `forward` also watches its stdout: when the
 *    reader of the stream goes away (POLLERR), it stops;
 *  - the first id must arrive within a timeout, so a consumer that is not a
 *    sampler (`forward MODEL | od`) ends with an error, not a hang;
 *  - the directory and FIFO are removed on every exit path, signals included
 *    (feedback_open registers them with lib/core/cleanup.h).
 */
#ifndef FEEDBACK_H
#define FEEDBACK_H

#include <limits.h>
#include "core/err.h"

struct feedback {
	char dir[PATH_MAX];   /* the private directory */
	char path[PATH_MAX];  /* dir + "/ids" */
	int made;             /* what exists: 0 nothing, 1 dir, 2 the FIFO too */
	int fd;               /* read end, non-blocking; -1 when closed */
	char buf[64];         /* a partial line carried between reads */
	int len;
	int got_any;          /* an id has arrived: the sampler is connected */
};

/* forward: creates the directory and the FIFO and opens the read end. */
int feedback_open(struct feedback *fb, struct err *e);

/* forward: waits for the next id. Returns 1 and sets *id; 0 when the sampler
 * closed the FIFO or the reader of watch_fd (forward's stdout) went away;
 * -1 on error, including a malformed line and no first id within
 * first_timeout_ms ("no sampler connected to the feedback channel within
 * 10 s"). Later ids wait as long as they take. */
int feedback_next(struct feedback *fb, int watch_fd, int first_timeout_ms,
		  int *id, struct err *e);

/* forward: closes the FIFO and removes it and its directory. Idempotent. */
void feedback_close(struct feedback *fb);

/* sample: opens the FIFO named in the stream header for writing. Fails with
 * a clear message when no forward is reading it, or the path is not what
 * feedback_open makes (DIR/forward.XXXXXX/ids: a FIFO of the user's in a
 * directory of the user's that only the user can enter, neither a
 * symbolic link): a header can name any path, and sample writes into it
 * and removes it.
 * Once open, it removes the FIFO's name and (if then empty) its directory:
 * with both ends open nobody needs them, and this way nothing is left
 * behind even when forward is killed with SIGKILL. Returns the fd or -1. */
int feedback_open_writer(const char *path, struct err *e);

/* sample: sends one id. Returns 0, or -1 when forward has gone away (EPIPE:
 * the caller should have SIGPIPE ignored) or on another error. */
int feedback_send(int fd, int id, struct err *e);

#endif
