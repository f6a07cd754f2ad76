/* path: file names built from other file names, with their length checked.
 */
#ifndef PATH_H
#define PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

/* "DIR/NAME" into out[cap] (no second '/' when DIR ends in one). Returns
 * 0, or -1 with e "DIR: path too long" when it does not fit. */
int path_join(char *out, size_t cap, const char *dir, const char *name, struct err *e);

/* NAME in the directory that holds FILE: "m/x.safetensors" -> "m/NAME",
 * "/x" -> "/NAME", "x" -> "./NAME". Returns 0, or -1 as path_join. */
int path_beside(char *out, size_t cap, const char *file, const char *name,
		struct err *e);

/* Whether path names a directory (following symbolic links). */
bool path_is_dir(const char *path);

#endif
