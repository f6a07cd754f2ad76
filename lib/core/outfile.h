/* outfile: a file written whole or not at all.
 *
 * The bytes go to a temporary file beside the destination (the same
 * directory, so the final rename is atomic), registered with
 * lib/core/cleanup.h, which replaces the destination only at
 * outfile_commit: a reader never sees a partial file, and a failure, an
 * exit or a signal leaves none behind. The file gets the mode a new file
 * gets from open(2), 0666 less the umask (not mkstemp's 0600). Committing
 * syncs the file, then the directory, so that after a crash the
 * destination is either the old file or the whole new one.
 *
 * A symbolic link is followed (to the end of a chain, dangling or not):
 * the temporary file goes beside the file it names, which the rename
 * replaces, and the link stays. A destination that is a FIFO or a
 * character device (/dev/stdout, a terminal, /dev/null) is a stream and
 * is written directly: renaming over it would replace the pipe or the
 * device instead of writing into it. Any other kind (a directory, a
 * socket) is refused.
 */
#ifndef OUTFILE_H
#define OUTFILE_H

#include <limits.h>
#include <stdio.h>

#include "core/err.h"

struct outfile {
	FILE *fp;             /* write here */
	char path[PATH_MAX];  /* the destination */
	char tmp[PATH_MAX];   /* the temporary file; "" when writing path
	                       * directly, and after commit or abort */
};

/* Opens path. Returns 0, or -1 with e "path: strerror" (the path after
 * its links are followed). */
int outfile_open(struct outfile *o, const char *path, struct err *e);

/* Flushes, syncs and closes the file, and renames it over the destination.
 * Returns 0, or -1 with e "path: write error: strerror" (a full disk, a
 * file size limit), having removed the temporary file. */
int outfile_commit(struct outfile *o, struct err *e);

/* Closes the file and removes the temporary one. Does nothing after
 * commit or abort. */
void outfile_abort(struct outfile *o);

#endif
