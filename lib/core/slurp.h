/* slurp: the whole of a file in memory, for inputs that are read once and
 * parsed (text, ids, JSON). Large model files are mapped instead
 * (lib/core/mapfile.h).
 */
#ifndef SLURP_H
#define SLURP_H

#include <stddef.h>

#include "core/err.h"

/* Reads all of path ("-": standard input, named "<stdin>" in messages) to
 * its end, so pipes and FIFOs work too, into a malloc'd buffer with a NUL
 * after the last byte (text can be parsed as a string; the bytes may hold
 * NULs of their own); *len is the byte count. Returns NULL with e
 * "path: strerror" (or "path: out of memory") on failure. */
char *slurp(const char *path, size_t *len, struct err *e);

#endif
