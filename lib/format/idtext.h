/* idtext: token ids as text, the format between the tools (tok encode's
 * output, forward's input, ppl --ids): decimal ids separated by any
 * whitespace, one or more per line.
 */
#ifndef IDTEXT_H
#define IDTEXT_H

#include <stddef.h>
#include "core/err.h"

/* Parses text[0..len) into a malloc'd array of *n ids, each in
 * [0, n_vocab). Any byte that is not a digit or whitespace, a NUL
 * included, is an error. Errors name the input (name), the line and the
 * token, escaped (\xNN) where it is not printable ASCII:
 * "NAME: line 2: 'x7' is not a token id", "NAME: line 1: id 151936 is
 * outside the vocabulary (0..151935)", "NAME: no token ids" for an input
 * with none. Returns NULL with e filled on failure. */
int *idtext_parse(const char *text, size_t len, const char *name, int n_vocab, long *n,
		  struct err *e);

/* A growing array of ids. */
struct idtext {
	int *ids;
	long n, cap;
};

/* Appends the ids of text, whose first line is line `line` of the input,
 * to out (grown with realloc; the caller frees out->ids). Errors as
 * idtext_parse's. Returns 0 or -1. For inputs read a line at a time
 * (forward's prompts). */
int idtext_append(const char *text, size_t len, const char *name, long line, int n_vocab,
		  struct idtext *out, struct err *e);

#endif
