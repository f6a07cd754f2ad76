/* err: how the library reports failure.
 *
 * A library function that can fail takes a `struct err *` as its last
 * argument, returns 0 on success and -1 on failure, and on failure fills the
 * message. The message is one line, without the program name, and names the
 * thing that was wrong: "data/x.json: line 3: expected string". The tool
 * decides what to print and which status to exit with; lib/ never prints and
 * never exits.
 */
#ifndef ERR_H
#define ERR_H

#include <stddef.h>

/* What kind of failure, for a caller that acts on it rather than on the
 * words of the message. */
enum err_kind {
	ERR_INVALID = 0,  /* the input is wrong, or the system refused: the default */
	ERR_WRITE,        /* an output could not be written; errnum says why
	                   * (EPIPE: its reader went away) */
};

struct err {
	enum err_kind kind;
	int errnum;       /* ERR_WRITE: the errno of the failed write */
	char msg[512];
};

/* Formats the message (printf-style) into e, of kind ERR_INVALID, and
 * returns -1, so a failing function can `return err_set(e, "%s:
 * truncated", path);`. e may be NULL. */
int err_set(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The same for a failed write: kind ERR_WRITE, errnum, and the message fmt
 * followed by ": strerror(errnum)" ("out.q8: write error: No space left on
 * device"). */
int err_write(struct err *e, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes the existing message with "prefix: " (e.g. a file name) and
 * returns -1. */
int err_prefix(struct err *e, const char *prefix);

#endif
