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

struct err {
	char msg[512];
};

/* Formats the message (printf-style) into e and returns -1, so a failing
 * function can `return err_set(e, "%s: truncated", path);`. e may be NULL. */
int err_set(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefixes the existing message with "prefix: " (e.g. a file name) and
 * returns -1. */
int err_prefix(struct err *e, const char *prefix);

#endif
