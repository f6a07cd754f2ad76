/* cli: what every tool's main() shares, and the only part of lib/ that
 * prints or exits (on behalf of the tool that called it).
 *
 * Conventions (STYLE.md): errors are one line "prog: problem" on stderr;
 * a runtime failure exits 1, misuse exits 2 after printing the usage line;
 * stdout is flushed and checked at exit, so a full disk is an error; a reader
 * that went away (EPIPE) ends the tool quietly with status 141; a file size
 * limit (SIGXFSZ, ignored) is a write error like a full disk. One error
 * line per run: after die(), the exit flush reports nothing more.
 */
#ifndef CLI_H
#define CLI_H

#include "core/err.h"

/* Exit statuses shared by every tool. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,   /* runtime failure: bad file, bad stream, I/O error */
	EXIT_USAGE = 2,  /* bad flag or argument */
	EXIT_MISMATCH = 3, /* st-inspect: the file does not match its config */
	EXIT_PIPE = 141, /* the reader of stdout went away (128 + SIGPIPE) */
};

/* Sets the program name used in messages and the usage line printed on
 * misuse, and arranges for stdout to be flushed and checked at exit. */
void cli_init(const char *prog, const char *usage);

const char *cli_prog(void);

/* Prints "prog: message" and exits 1. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "prog: e->msg" and exits 1. */
_Noreturn void die_err(const struct err *e);

/* Prints "prog: message", then "usage: ..." and exits 2. */
_Noreturn void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "prog: warning: message" on stderr. */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Checked flag values: on failure, a usage error naming the flag and the
 * allowed range ("prog: --top-p: 1.5 is out of range [0, 1]"). */
long flag_long(const char *flag, const char *val, long min, long max);
double flag_double(const char *flag, const char *val, double min, double max);

/* Flushes stdout and exits: 0, or 141 quietly if the reader went away, or 1
 * with a message on any other write error (ENOSPC, EIO). Tools that stop
 * early for a reason of their own call this instead of exit(). */
_Noreturn void cli_exit(int status);

/* Refuses (exit 2 with a hint) when stdout is a terminal: for tools that
 * write binary. */
void cli_refuse_binary_tty(void);

#endif
