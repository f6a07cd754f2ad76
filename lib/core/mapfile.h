/* mapfile: a whole file mapped read-only, and anonymous memory for the
 * weights.
 *
 * Opening the real 988 MB model is an mmap, not a read: pages come in only
 * when something touches them. An empty file maps to data == NULL, size 0.
 */
#ifndef MAPFILE_H
#define MAPFILE_H

#include <stddef.h>
#include <sys/types.h>
#include "core/err.h"

struct mapfile {
	const unsigned char *data; /* the file's bytes, or NULL when size == 0 */
	size_t size;               /* bytes */
};

/* Opens path for reading when it is a regular file (never waiting, as
 * opening a FIFO would), storing its size in *size when size is not NULL.
 * Returns the descriptor, or -1 with e "path: strerror", "path: is a
 * directory", "path: is a FIFO, not a regular file", ... Every model,
 * tokenizer and config file is opened through it. */
int file_open_regular(const char *path, off_t *size, struct err *e);

/* Maps path read-only (a regular file: file_open_regular). On failure fills e with "path: strerror". The caller
 * releases the mapping with mapfile_close. */
int mapfile_open(struct mapfile *m, const char *path, struct err *e);

void mapfile_close(struct mapfile *m);

/* bytes of fresh anonymous memory (zero until written), or NULL with errno
 * set; released with munmap(p, bytes). Asks for huge pages (MADV_HUGEPAGE;
 * the kernel may decline): decode streams the weights once a token, and
 * with 4 KiB pages each page costs a TLB miss (in a VM, a walk of two page
 * tables). Every copy, conversion and tiling of the weights is made in it,
 * and so is bench's bandwidth probe, so that the limit it reports is read
 * as the weights are. Opening can take longer when the kernel has to
 * compact memory for the huge pages. The measurements: docs/performance.md
 * ("Huge pages for the copy", "Huge pages for every layout"). */
void *anon_alloc(size_t bytes);

#endif
