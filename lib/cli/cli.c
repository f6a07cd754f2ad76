/* cli: see cli.h. */
#include "cli/cli.h"
#include "core/parse.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef QWENPIPE_VERSION
#error "QWENPIPE_VERSION: the Makefile passes the VERSION file's line"
#endif
const char cli_version[] = QWENPIPE_VERSION;

static const char *prog_name = "?";
static const struct cli_spec *spec;
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

/* The usage: "usage: FIRST", then for each further form "   or: NEXT" on
 * its own line (--help), or ", or NEXT" on the same line (after a usage
 * error, whose message and usage are two lines). */
static void print_usage(FILE *fp, int one_line)
{
	const char *u = spec ? spec->usage : "";
	fputs("usage: ", fp);
	for (;;) {
		const char *nl = strchr(u, '\n');
		int n = nl ? (int)(nl - u) : (int)strlen(u);
		fprintf(fp, "%.*s", n, u);
		if (!nl || !nl[1])
			break;
		u = nl + 1;
		fputs(one_line ? ", or " : "\n   or: ", fp);
	}
	fputc('\n', fp);
}

void cli_init(const struct cli_spec *s)
{
	spec = s;
	prog_name = s->prog;
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

_Noreturn void cli_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("", fmt, ap);
	va_end(ap);
	reported = 1;
	exit(EXIT_FAIL);
}

_Noreturn void cli_die_err(const struct err *e)
{
	if (e->kind == ERR_WRITE && e->errnum == EPIPE) {
		/* stdout's error flag is this one: left set, the check at exit
		 * would report it again, with whatever errno the cleanup left */
		clearerr(stdout);
		cli_exit(EXIT_PIPE);
	}
	cli_die("%s", e->msg);
}

_Noreturn void cli_die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("", fmt, ap);
	va_end(ap);
	print_usage(stderr, 1);
	reported = 1;
	exit(EXIT_USAGE);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("warning: ", fmt, ap);
	va_end(ap);
}

long cli_flag_long(const char *flag, const char *val, long min, long max)
{
	struct err e;
	long v;
	if (parse_long(val, min, max, &v, &e) < 0)
		cli_die_usage("%s: %s", flag, e.msg);
	return v;
}

double cli_flag_double(const char *flag, const char *val, double min, double max)
{
	struct err e;
	double v;
	if (parse_double(val, min, max, &v, &e) < 0)
		cli_die_usage("%s: %s", flag, e.msg);
	return v;
}

void cli_outfile_open(struct outfile *o, const char *path)
{
	struct err e;
	if (outfile_open(o, path, &e) < 0)
		cli_die_err(&e);
}

void cli_outfile_commit(struct outfile *o)
{
	struct err e;
	if (outfile_commit(o, &e) < 0)
		cli_die_err(&e);
}

int cli_same_file(const char *a, const char *b)
{
	struct stat x, y;
	return !strcmp(a, b) || (stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
				 x.st_ino == y.st_ino);
}

void cli_refuse_input(const char *flag, const char *out, const char *const *in, size_t n)
{
	for (size_t k = 0; out && k < n; k++)
		if (in[k] && access(in[k], F_OK) == 0 && cli_same_file(out, in[k]))
			cli_die_usage("%s: %s is the input %s", flag, out, in[k]);
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

/* ---- the flag tables of cli_getopt ---- */

enum { ID_VERSION = 0x7ff0, ID_OPTIONS };  /* beyond any CLI_LONG + n */
enum { MAX_OPTS = 64, MAX_NAMES = 128, HELP_COL = 26 };

static const struct cli_opt builtin[] = {
	{ 'h', "help", NULL, "this text" },
	{ ID_VERSION, "version", NULL, "the version" },
	{ ID_OPTIONS, "options", NULL, "the flags, one per line, for scripts" },
	{ 0 },
};

static struct option longopts[MAX_NAMES + 1];
static char shortopts[2 * MAX_OPTS + 2];
static char names_buf[4096];

/* A malformed table is the tool's bug: say so before any parsing. */
static _Noreturn void table_bug(const char *what, const char *names)
{
	fprintf(stderr, "%s: option table: %s (%s)\n", prog_name, what, names);
	abort();
}

static void add_opts(const struct cli_opt *o, int *nl, int *ns, size_t *nb)
{
	for (; o->names; o++) {
		if (!o->id)
			continue;
		if (o->id < CLI_LONG) {
			if (*ns + 2 >= (int)sizeof shortopts || strchr(shortopts, o->id))
				table_bug("short letter taken", o->names);
			shortopts[(*ns)++] = (char)o->id;
			if (o->arg)
				shortopts[(*ns)++] = ':';
		}
		for (const char *n = o->names; *n;) {
			size_t len = strcspn(n, "|");
			if (*nl >= MAX_NAMES || *nb + len + 1 > sizeof names_buf)
				table_bug("too many names", o->names);
			char *copy = names_buf + *nb;
			memcpy(copy, n, len);
			copy[len] = 0;
			*nb += len + 1;
			for (int i = 0; i < *nl; i++)
				if (!strcmp(longopts[i].name, copy))
					table_bug("long name taken", o->names);
			longopts[(*nl)++] = (struct option){
				.name = copy,
				.has_arg = o->arg ? required_argument : no_argument,
				.val = o->id,
			};
			n += len;
			if (*n == '|')
				n++;
		}
	}
}

static void build_tables(void)
{
	int nl = 0, ns = 0;
	size_t nb = 0;
	shortopts[ns++] = ':';  /* a missing value returns ':', not '?' */
	add_opts(spec->opts, &nl, &ns, &nb);
	add_opts(builtin, &nl, &ns, &nb);
	longopts[nl] = (struct option){ 0 };
	shortopts[ns] = 0;
}

/* "  -t, --threads N" then the help lines from column HELP_COL, then the
 * aliases. */
static void print_opt(const struct cli_opt *o)
{
	char left[128];
	size_t first = strcspn(o->names, "|");
	if (!o->id)
		snprintf(left, sizeof left, "  %s", o->names);
	else
		snprintf(left, sizeof left, "  %c%c%c --%.*s%s%s",
			 o->id < CLI_LONG ? '-' : ' ', o->id < CLI_LONG ? o->id : ' ',
			 o->id < CLI_LONG ? ',' : ' ', (int)first, o->names,
			 o->arg ? " " : "", o->arg ? o->arg : "");
	int col = printf("%s", left);
	if (col >= HELP_COL - 1) {
		putchar('\n');
		col = 0;
	}
	const char *h = o->help;
	for (;;) {
		const char *nl = strchr(h, '\n');
		int n = nl ? (int)(nl - h) : (int)strlen(h);
		printf("%*s%.*s\n", HELP_COL - col, "", n, h);
		col = 0;
		if (!nl)
			break;
		h = nl + 1;
	}
	if (o->id && o->names[first]) {  /* an operand's | is its own: FILE|DIR */
		printf("%*s(also", HELP_COL, "");
		for (const char *n = o->names + first; *n == '|';) {
			size_t len = strcspn(n + 1, "|");
			printf(" --%.*s", (int)len, n + 1);
			n += len + 1;
		}
		puts(")");
	}
}

static void print_help(void)
{
	print_usage(stdout, 0);
	printf("\n%s", spec->about);
	int operands = 0;
	for (const struct cli_opt *o = spec->opts; o->names; o++)
		operands += !o->id;
	if (operands) {
		puts("\nArguments:");
		for (const struct cli_opt *o = spec->opts; o->names; o++)
			if (!o->id)
				print_opt(o);
	}
	puts("\nOptions:");
	for (const struct cli_opt *o = spec->opts; o->names; o++)
		if (o->id)
			print_opt(o);
	for (const struct cli_opt *o = builtin; o->names; o++)
		print_opt(o);
	if (spec->notes)
		printf("\n%s", spec->notes);
}

/* "--threads	value	-t --threads-alias" */
static void print_options(const struct cli_opt *o)
{
	for (; o->names; o++) {
		if (!o->id)
			continue;
		size_t first = strcspn(o->names, "|");
		printf("--%.*s\t%s\t", (int)first, o->names, o->arg ? "value" : "switch");
		int others = 0;
		if (o->id < CLI_LONG)
			printf("-%c", o->id), others++;
		for (const char *n = o->names + first; *n == '|';) {
			size_t len = strcspn(n + 1, "|");
			printf("%s--%.*s", others++ ? " " : "", (int)len, n + 1);
			n += len + 1;
		}
		puts(others ? "" : "-");
	}
}

/* The long option named by w[0..n) (after the "--"): an exact name, else
 * the only one it abbreviates (aliases of one flag count once); *n_match
 * counts the flags it could name. */
static const struct option *long_named(const char *w, size_t n, int *n_match)
{
	const struct option *hit = NULL;
	*n_match = 0;
	for (const struct option *lo = longopts; lo->name; lo++) {
		if (strncmp(lo->name, w, n) != 0)
			continue;
		if (strlen(lo->name) == n) {
			*n_match = 1;
			return lo;
		}
		if (!hit || hit->val != lo->val)
			++*n_match;
		hit = hit ? hit : lo;
	}
	return *n_match == 1 ? hit : NULL;
}

/* The first (primary) long name of flag id, or NULL. */
static const struct option *long_of(int id)
{
	for (const struct option *lo = longopts; lo->name; lo++)
		if (lo->val == id)
			return lo;
	return NULL;
}

const char *cli_flag_name(int id)
{
	const struct option *o = long_of(id);
	return o ? o->name : "?";
}

/* The usage error for what getopt_long refused: c is ':' (a flag without
 * its value) or '?', w the word it was reading (argv[optind - 1]). A
 * missing value names the flag by its long form whatever was typed (-c,
 * --ctx, --ct): "--ctx: missing value". After a short flag in a bundle
 * ("-vx") optind may still point past an earlier word, so w is trusted as
 * the culprit only when it is a long flag that optopt agrees with (optopt
 * is 0 for an unknown or ambiguous long flag, else the flag's id). */
static _Noreturn void bad_option(int c, const char *w)
{
	int n_match = 0, is_long = w && w[0] == '-' && w[1] == '-' && w[2];
	const struct option *o = NULL;
	size_t n = 0;
	if (is_long) {
		n = strcspn(w + 2, "=");
		o = long_named(w + 2, n, &n_match);
		if (optopt && (!o || o->val != optopt))
			is_long = 0;
	}
	if (c == ':') {
		o = long_of(is_long && o ? o->val : optopt);
		if (o)
			cli_die_usage("--%s: missing value", o->name);
		cli_die_usage("-%c: missing value", optopt);
	}
	if (!is_long) {
		if (optopt > 0 && optopt < CLI_LONG)
			cli_die_usage("unknown option '-%c'", optopt);
		cli_die_usage("unknown option '%s'", w ? w : "?");
	}
	if (o && w[2 + n] == '=' && o->has_arg == no_argument)
		cli_die_usage("--%s: takes no value", long_of(o->val)->name);
	if (n_match > 1) {
		char list[256] = "";
		size_t k = 0;
		int last = -1;
		for (const struct option *p = longopts; p->name && k + 40 < sizeof list; p++)
			if (strncmp(p->name, w + 2, n) == 0 && p->val != last) {
				k += (size_t)snprintf(list + k, sizeof list - k, "%s--%s",
						      k ? ", " : "", p->name);
				last = p->val;
			}
		cli_die_usage("option '%.*s' is ambiguous (%s)", (int)(n + 2), w, list);
	}
	cli_die_usage("unknown option '%.*s'", (int)(n + 2), w);
}

int cli_getopt(int argc, char **argv, const char **val)
{
	if (!shortopts[0]) {
		build_tables();
		opterr = 0;
	}
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);
	*val = optarg;
	const char *arg = argv[optind - 1];
	switch (c) {
	case 'h':
		print_help();
		cli_exit(EXIT_OK);
	case ID_VERSION:
		printf("%s (qwenpipe) %s\n", prog_name, cli_version);
		cli_exit(EXIT_OK);
	case ID_OPTIONS:
		print_options(spec->opts);
		print_options(builtin);
		cli_exit(EXIT_OK);
	case ':':
	case '?':
		bad_option(c, arg);
	}
	return c;
}
