/* feedback: see feedback.h. */
#include "format/feedback.h"
#include "core/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int feedback_open(struct feedback *fb, struct err *e)
{
	memset(fb, 0, sizeof *fb);
	fb->fd = -1;
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (strlen(tmp) > sizeof fb->dir - 32)
		return err_set(e, "TMPDIR: path too long");
	snprintf(fb->dir, sizeof fb->dir, "%.4000s/forward.XXXXXX", tmp);
	/* each made and registered with the signals held (lib/core/cleanup.h):
	 * no moment where one exists that a signal would leave behind */
	cleanup_hold();
	int saved = 0;
	if (!mkdtemp(fb->dir)) {
		saved = errno;
		fb->dir[0] = 0;
	} else {
		fb->made = 1;
		cleanup_add(fb->dir);
		snprintf(fb->path, sizeof fb->path, "%.4000s/ids", fb->dir);
		if (mkfifo(fb->path, 0600) < 0)
			saved = errno;
		else
			fb->made = 2, cleanup_add(fb->path);
	}
	cleanup_release();
	if (!fb->made)
		return err_set(e, "%s: cannot create the feedback directory: %s",
			       tmp, strerror(saved));
	if (fb->made == 1) {
		feedback_close(fb);
		return err_set(e, "%s/ids: mkfifo: %s", tmp, strerror(saved));
	}
	fb->fd = open(fb->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fb->fd < 0) {
		saved = errno;
		feedback_close(fb);
		return err_set(e, "%s: %s", fb->path, strerror(saved));
	}
	return 0;
}

/* Takes one complete line from the buffer, if there is one. */
static int take_line(struct feedback *fb, int *id, struct err *e)
{
	char *nl = memchr(fb->buf, '\n', (size_t)fb->len);
	if (!nl)
		return 0;
	*nl = 0;
	char *end;
	errno = 0;
	long v = strtol(fb->buf, &end, 10);
	if (end == fb->buf || *end || errno || v < 0 || v > INT_MAX)
		return err_set(e, "%s: bad id '%s' on the feedback channel",
			       fb->path, fb->buf);
	int used = (int)(nl - fb->buf) + 1;
	memmove(fb->buf, nl + 1, (size_t)(fb->len - used));
	fb->len -= used;
	*id = (int)v;
	fb->got_any = 1;
	return 1;
}

int feedback_next(struct feedback *fb, int watch_fd, int first_timeout_ms,
		  int *id, struct err *e)
{
	for (;;) {
		int r = take_line(fb, id, e);
		if (r)
			return r;
		if (fb->len == (int)sizeof fb->buf)
			return err_set(e, "%s: line too long on the feedback channel",
				       fb->path);
		struct pollfd p[2] = {
			{ .fd = fb->fd, .events = POLLIN },
			{ .fd = watch_fd, .events = 0 },
		};
		int timeout = fb->got_any ? -1 : first_timeout_ms;
		int n = poll(p, watch_fd >= 0 ? 2 : 1, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set(e, "poll: %s", strerror(errno));
		}
		if (n == 0)
			return err_set(e, "no sampler connected to the feedback channel "
				       "within %d s", first_timeout_ms / 1000);
		/* Ids sent before the sampler went are still taken: those it
		 * sends without waiting for a frame (accepted drafts) may be
		 * there when the reader of watch_fd has gone too. */
		if (!(p[0].revents & POLLIN) && watch_fd >= 0 &&
		    (p[1].revents & (POLLERR | POLLHUP)))
			return 0;
		if (p[0].revents & (POLLIN | POLLHUP)) {
			ssize_t got = read(fb->fd, fb->buf + fb->len,
					   sizeof fb->buf - (size_t)fb->len);
			if (got < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				return err_set(e, "%s: %s", fb->path, strerror(errno));
			}
			if (got == 0) /* writer closed */
				return 0;
			fb->len += (int)got;
		}
	}
}

void feedback_close(struct feedback *fb)
{
	if (fb->fd >= 0)
		close(fb->fd);
	fb->fd = -1;
	if (fb->made >= 2) {
		unlink(fb->path);
		cleanup_drop(fb->path);
	}
	if (fb->made >= 1) {
		rmdir(fb->dir);
		cleanup_drop(fb->dir);
	}
	fb->made = 0;
	fb->path[0] = 0;
	fb->dir[0] = 0;
}


/* Whether path has the shape feedback_open gives it, DIR/forward.XXXXXX/ids,
 * and both are what forward made: a directory that is not a link, the
 * user's own and private (mode 0700), holding a FIFO of the user's.
 * Anything else is someone else's, not to be written into or removed.
 * DIR itself is not compared with this process's TMPDIR: forward may have
 * been given another (TMPDIR=... forward | sample). */
static int is_forwards(const char *path)
{
	size_t n = strlen(path);
	const char *tail = "/forward.XXXXXX/ids";
	size_t t = strlen(tail);
	if (n < t || n >= PATH_MAX)
		return 0;
	const char *p = path + n - t;
	if (strncmp(p, "/forward.", 9) != 0 || strcmp(p + 15, "/ids") != 0)
		return 0;
	for (int i = 9; i < 15; i++)
		if (p[i] == '/')
			return 0;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%.*s", (int)(n - 4), path);
	struct stat d, f;
	return lstat(dir, &d) == 0 && S_ISDIR(d.st_mode) && d.st_uid == getuid() &&
	       (d.st_mode & 077) == 0 && lstat(path, &f) == 0 && S_ISFIFO(f.st_mode) &&
	       f.st_uid == getuid();
}

int feedback_open_writer(const char *path, struct err *e)
{
	if (!*path)
		return err_set(e, "the stream's feedback channel has an empty name");
	if (!is_forwards(path))
		return err_set(e, "%s: not a feedback channel that forward made (a FIFO "
			       "'ids' of yours in a private directory forward.XXXXXX)", path);
	/* Non-blocking open for writing fails with ENXIO when nobody reads:
	 * forward is gone, and waiting would hang. */
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENXIO || errno == ENOENT)
			return err_set(e, "%s: forward is not running (nobody reads "
				       "the feedback channel)", path);
		return err_set(e, "%s: %s", path, strerror(errno));
	}
	/* A stream header can name any path: write ids only into a FIFO. */
	struct stat st, lst;
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		return err_set(e, "%s: the feedback channel is not a FIFO", path);
	}
	/* Both ends are open: the names are no longer needed. Removing them
	 * now leaves nothing behind even if forward is then killed with
	 * SIGKILL (forward's own removal finds them gone, which is fine). */
	if (lstat(path, &lst) == 0 && lst.st_dev == st.st_dev &&
	    lst.st_ino == st.st_ino && unlink(path) == 0) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = 0;
			rmdir(dir); /* only if empty: forward's private directory */
		}
	}
	/* Back to blocking writes: an id is a few bytes, far below PIPE_BUF. */
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int feedback_send(int fd, int id, struct err *e)
{
	char line[16];
	int n = snprintf(line, sizeof line, "%d\n", id);
	for (;;) {
		ssize_t w = write(fd, line, (size_t)n);
		if (w == n)
			return 0;
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EPIPE)
			return err_set(e, "forward has exited");
		return err_set(e, "feedback channel: %s",
			       w < 0 ? strerror(errno) : "short write");
	}
}
