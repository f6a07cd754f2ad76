/* cli: see cli.h. */
#include "cli/cli.h"
#include "core/parse.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *prog_name = "?";
static const char *usage_line = "";
static int reported;  /* an error was printed: the exit flush adds none */

static void check_stdout(void)
{
	/* fflush then fclose: fclose alone loses the error of a buffered write
	 * to a closed pipe or a full disk. */
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		if (errno == EPIPE)
			_exit(EXIT_PIPE);
		if (!reported)
			fprintf(stderr, "%s: write error: %s\n", prog_name, strerror(errno));
		_exit(EXIT_FAIL);
	}
}

void cli_init(const char *prog, const char *usage)
{
	prog_name = prog;
	usage_line = usage;
	atexit(check_stdout);
	/* a file size limit (ulimit -f) is a write error (EFBIG) to report,
	 * not a signal that kills the tool mid-line */
	signal(SIGXFSZ, SIG_IGN);
}

const char *cli_prog(void)
{
	return prog_name;
}

_Noreturn void cli_exit(int status)
{
	exit(status); /* check_stdout runs from atexit */
}

static void vprint(const char *pre, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", prog_name, pre);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

_Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("", fmt, ap);
	va_end(ap);
	reported = 1;
	exit(EXIT_FAIL);
}

_Noreturn void die_err(const struct err *e)
{
	die("%s", e->msg);
}

_Noreturn void die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("", fmt, ap);
	va_end(ap);
	fprintf(stderr, "usage: %s\n", usage_line);
	reported = 1;
	exit(EXIT_USAGE);
}

void warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("warning: ", fmt, ap);
	va_end(ap);
}

long flag_long(const char *flag, const char *val, long min, long max)
{
	struct err e;
	long v;
	if (parse_long(val, min, max, &v, &e) < 0)
		die_usage("%s: %s", flag, e.msg);
	return v;
}

double flag_double(const char *flag, const char *val, double min, double max)
{
	struct err e;
	double v;
	if (parse_double(val, min, max, &v, &e) < 0)
		die_usage("%s: %s", flag, e.msg);
	return v;
}

void cli_refuse_binary_tty(void)
{
	if (isatty(STDOUT_FILENO)) {
		fprintf(stderr, "%s: refusing to write binary to a terminal\n"
			"hint: pipe it into another tool, or redirect it to a file\n",
			prog_name);
		exit(EXIT_USAGE);
	}
}
