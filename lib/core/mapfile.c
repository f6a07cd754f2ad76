/* mapfile: see mapfile.h. */
#include "core/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int file_open_regular(const char *path, off_t *size, struct err *e)
{
	/* Not blocking: opening a FIFO for reading would wait for a writer. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int saved = errno;
		close(fd);
		return err_set(e, "%s: %s", path, strerror(saved));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, "%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory" :
			       S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file" :
			       S_ISCHR(st.st_mode) ? "is a device, not a regular file" :
			       "is not a regular file");
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (size)
		*size = st.st_size;
	return fd;
}

int mapfile_open(struct mapfile *m, const char *path, struct err *e)
{
	m->data = NULL;
	m->size = 0;
	off_t size;
	int fd = file_open_regular(path, &size, e);
	if (fd < 0)
		return -1;
	struct stat st = { .st_size = size };
	if (st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			int saved = errno;
			close(fd);
			return err_set(e, "%s: mmap: %s", path, strerror(saved));
		}
		m->data = p;
		m->size = (size_t)st.st_size;
	}
	close(fd);
	return 0;
}

void mapfile_close(struct mapfile *m)
{
	if (m->data)
		munmap((void *)m->data, m->size);
	m->data = NULL;
	m->size = 0;
}

void *anon_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE);  /* advice only: no error to report */
	return p;
}
