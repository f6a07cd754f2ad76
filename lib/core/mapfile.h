/* mapfile: a whole file mapped read-only.
 *
 * Opening the real 988 MB model is an mmap, not a read: pages come in only
 * when something touches them. An empty file maps to data == NULL, size 0.
 */
#ifndef MAPFILE_H
#define MAPFILE_H

#include <stddef.h>
#include "core/err.h"

struct mapfile {
	const unsigned char *data; /* the file's bytes, or NULL when size == 0 */
	size_t size;               /* bytes */
};

/* Maps path read-only. On failure fills e with "path: strerror". The caller
 * releases the mapping with mapfile_close. */
int mapfile_open(struct mapfile *m, const char *path, struct err *e);

void mapfile_close(struct mapfile *m);

#endif
