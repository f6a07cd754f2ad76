/* cli: what every tool's main() shares, and the only part of lib/ that
 * prints or exits (on behalf of the tool that called it).
 *
 * Conventions (docs/style.md): errors are one line "prog: problem" on stderr;
 * a runtime failure exits 1, misuse exits 2 after printing the usage line;
 * stdout is flushed and checked at exit, so a full disk is an error; a reader
 * that went away (EPIPE) ends the tool quietly with status 141; a file size
 * limit (SIGXFSZ, ignored) is a write error like a full disk. One error
 * line per run: after cli_die(), the exit flush reports nothing more.
 */
#ifndef CLI_H
#define CLI_H

#include "core/err.h"
#include "core/outfile.h"

#include <unistd.h>  /* optind, after cli_getopt */

/* Exit statuses shared by every tool. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,   /* runtime failure: bad file, bad stream, I/O error */
	EXIT_USAGE = 2,  /* bad flag or argument */
	EXIT_MISMATCH = 3, /* st-inspect: the file does not match its config */
	EXIT_PIPE = 141, /* the reader of stdout went away (128 + SIGPIPE) */
};

/* One flag of a tool, in the table its main() hands to cli_init. */
struct cli_opt {
	/* What cli_getopt returns for it: the short letter ('t' for -t), or
	 * CLI_LONG + n for a flag with no short form. 0 marks an operand
	 * (MODEL, FILE): listed in --help, never parsed. */
	int id;
	/* The long name without dashes, then any aliases after '|'
	 * ("ctx|ctx-size": --ctx and --ctx-size are the same flag). */
	const char *names;
	const char *arg;   /* the value's name in --help ("N"); NULL: a switch */
	const char *help;  /* what it does; '\n' starts another line */
};
enum { CLI_LONG = 256 };

/* A tool's command line: --help prints it in one shape for every tool,
 *
 *   usage: LINE (each further line of usage as "   or: LINE")
 *
 *   ABOUT
 *
 *   Options:
 *     -t, --threads N        HELP
 *   ...
 *
 *   NOTES
 *
 * and the flags --help (-h), --version and --options are added to every
 * table (cli_getopt answers them and exits). */
struct cli_spec {
	const char *prog;
	const char *usage;           /* lines without "usage: ", split by '\n' */
	const char *about;           /* a paragraph or more, ending in '\n' */
	const struct cli_opt *opts;  /* ends with { 0 } */
	const char *notes;           /* after the options, or NULL */
};

/* The version of every tool and script (the VERSION file). */
extern const char cli_version[];

/* Sets the program name used in messages and the usage printed on misuse,
 * and arranges for stdout to be flushed and checked at exit. */
void cli_init(const struct cli_spec *spec);

/* getopt_long over spec->opts (GNU argument order: flags and operands
 * mixed, "--" ends the flags). Returns the next flag's id, with its value
 * in *val (NULL for a switch), or -1 when no flag is left; the operands
 * are then argv[optind..argc-1]. An unknown flag or a missing value is a
 * usage error, worded alike in every tool: "prog: --ctx: missing value"
 * (the flag's first long name, whether -c, --ctx or --ct was typed),
 * "prog: unknown option '--frob'" (or '-x'), "prog: --greedy: takes no
 * value", "prog: option '--t' is ambiguous (--temperature, --top-k)".
 * --help, --version and --options print to stdout and exit 0: --options
 * prints one line per flag, "--long TAB value|switch TAB other
 * spellings" (space-separated, "-" for none), for scripts that route flags
 * to the tool that takes them. */
int cli_getopt(int argc, char **argv, const char **val);

const char *cli_prog(void);

/* The long name (without its "--") of the flag cli_getopt returned as id:
 * its first, as --help lists it. */
const char *cli_flag_name(int id);

/* Prints "prog: message" and exits 1. */
_Noreturn void cli_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "prog: e->msg" and exits 1; or, for a write whose reader went
 * away (ERR_WRITE, EPIPE), exits 141 quietly. */
_Noreturn void cli_die_err(const struct err *e);

/* Prints "prog: message", then "usage: ..." and exits 2. */
_Noreturn void cli_die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "prog: warning: message" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Checked flag values: on failure, a usage error naming the flag and the
 * allowed range ("prog: --top-p: 1.5 is out of range [0, 1]"). */
long cli_flag_long(const char *flag, const char *val, long min, long max);
double cli_flag_double(const char *flag, const char *val, double min, double max);

/* Flushes stdout and exits: 0, or 141 quietly if the reader went away, or 1
 * with a message on any other write error (ENOSPC, EIO). Tools that stop
 * early for a reason of their own call this instead of exit(). */
_Noreturn void cli_exit(int status);

/* outfile_open and outfile_commit (lib/core/outfile.h), exiting 1 with
 * their message on failure. */
void cli_outfile_open(struct outfile *o, const char *path);
void cli_outfile_commit(struct outfile *o);

/* Whether paths a and b name the same file: the same name, or the same
 * existing file (device and inode, whatever the names and links). */
int cli_same_file(const char *a, const char *b);

/* Exits 2 with "FLAG: OUT is the input IN" when out (NULL: no output) is
 * one of the files in[0..n) that exist (NULL entries skipped): writing it
 * would destroy what is read. */
void cli_refuse_input(const char *flag, const char *out, const char *const *in, size_t n);

/* Refuses (exit 2 with a hint) when stdout is a terminal: for tools that
 * write binary. */
void cli_refuse_binary_tty(void);

#endif
