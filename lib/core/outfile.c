/* outfile: see outfile.h. */
#include "core/outfile.h"
#include "core/cleanup.h"
#include "core/path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What path names once its symbolic links are followed (a link may
 * dangle: the file it names is then made), into out[PATH_MAX]. */
static int resolve(char *out, const char *path, struct err *e)
{
	if (strlen(path) >= PATH_MAX)
		return err_set(e, "%.200s: path too long", path);
	strcpy(out, path);
	for (int hops = 0;; hops++) {
		struct stat sb;
		if (lstat(out, &sb) < 0 || !S_ISLNK(sb.st_mode))
			return 0;
		if (hops == 40)
			return err_set(e, "%s: %s", path, strerror(ELOOP));
		char target[PATH_MAX], next[PATH_MAX];
		ssize_t n = readlink(out, target, sizeof target - 1);
		if (n < 0)
			return err_set(e, "%s: %s", path, strerror(errno));
		target[n] = 0;
		if (target[0] == '/')
			strcpy(next, target);
		else if (path_beside(next, sizeof next, out, target, e) < 0)
			return -1;
		strcpy(out, next);
	}
}

int outfile_open(struct outfile *o, const char *path, struct err *e)
{
	memset(o, 0, sizeof *o);
	/* What the path ends at, links followed by the kernel (/dev/stderr
	 * is a link to /proc/self/fd/2, whose text names no file) */
	struct stat sb;
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		if (!S_ISCHR(sb.st_mode) && !S_ISFIFO(sb.st_mode))
			return err_set(e, "%s: %s", path, S_ISDIR(sb.st_mode) ? strerror(EISDIR) :
				       "is not a regular file, a FIFO or a device");
		if (strlen(path) >= sizeof o->path)
			return err_set(e, "%.200s: path too long", path);
		strcpy(o->path, path);
		if (!(o->fp = fopen(path, "w")))
			return err_set(e, "%s: %s", path, strerror(errno));
		return 0;
	}
	if (resolve(o->path, path, e) < 0)
		return -1;
	path = o->path;
	/* "DIR/.NAME.tmp.XXXXXX": hidden, and beside the destination */
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char base[NAME_MAX + 16];
	snprintf(base, sizeof base, ".%.*s.tmp.XXXXXX", NAME_MAX - 12, name);
	if (path_beside(o->tmp, sizeof o->tmp, path, base, e) < 0) {
		o->tmp[0] = 0;
		return -1;
	}
	cleanup_hold();
	int fd = mkstemp(o->tmp), saved = errno;
	if (fd >= 0 && cleanup_add(o->tmp) < 0) {
		unlink(o->tmp);
		close(fd);
		fd = -1;
		saved = EMFILE;
	}
	cleanup_release();
	if (fd < 0) {
		o->tmp[0] = 0;
		return err_set(e, "%s: cannot create a temporary file beside it: %s", path,
			       strerror(saved));
	}
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) < 0 || !(o->fp = fdopen(fd, "w"))) {
		saved = errno;
		close(fd);
		outfile_abort(o);
		return err_set(e, "%s: %s", path, strerror(saved));
	}
	return 0;
}

int outfile_commit(struct outfile *o, struct err *e)
{
	int bad = fflush(o->fp) != 0 || ferror(o->fp) ||
		  (o->tmp[0] && fsync(fileno(o->fp)) != 0);
	int saved = errno;
	if (fclose(o->fp) != 0 && !bad)
		bad = 1, saved = errno;
	o->fp = NULL;
	if (!bad && o->tmp[0] && rename(o->tmp, o->path) < 0)
		bad = 1, saved = errno;
	if (bad) {
		outfile_abort(o);
		return err_write(e, saved, "%s: write error", o->path);
	}
	if (o->tmp[0]) {
		cleanup_drop(o->tmp);
		o->tmp[0] = 0;
		/* the rename lasts once the directory is synced too; some file
		 * systems cannot sync a directory, which changes nothing here */
		char dir[PATH_MAX];
		if (path_beside(dir, sizeof dir, o->path, ".", NULL) == 0) {
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0) {
				fsync(dfd);
				close(dfd);
			}
		}
	}
	return 0;
}

void outfile_abort(struct outfile *o)
{
	if (o->fp)
		fclose(o->fp);
	o->fp = NULL;
	if (o->tmp[0]) {
		unlink(o->tmp);
		cleanup_drop(o->tmp);
		o->tmp[0] = 0;
	}
}
