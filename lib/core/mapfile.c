/* mapfile: see mapfile.h. */
#include "core/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int mapfile_open(struct mapfile *m, const char *path, struct err *e)
{
	m->data = NULL;
	m->size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int saved = errno;
		close(fd);
		return err_set(e, "%s: %s", path, strerror(saved));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return err_set(e, "%s: is a directory", path);
	}
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
