/* parse: see parse.h. */
#include "core/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int parse_long(const char *s, long min, long max, long *out, struct err *e)
{
	char *end;
	if (!s || !*s || isspace((unsigned char)*s))
		return err_set(e, "'%s' is not a number", s ? s : "");
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*end)
		return err_set(e, "'%s' is not a whole number", s);
	if (errno == ERANGE || v < min || v > max)
		return err_set(e, "%s is out of range [%ld, %ld]", s, min, max);
	*out = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *out, struct err *e)
{
	char *end;
	if (!s || !*s || isspace((unsigned char)*s))
		return err_set(e, "'%s' is not a number", s ? s : "");
	errno = 0;
	double v = strtod(s, &end);
	/* decimal only: strtod also reads C's hexadecimal floats (0x10) */
	if (*end || !isfinite(v) || strpbrk(s, "xX"))
		return err_set(e, "'%s' is not a number", s);
	if (v < min || v > max)
		return err_set(e, "%s is out of range [%g, %g]", s, min, max);
	*out = v;
	return 0;
}

int parse_long_list(const char *s, long min, long max, long *out, int cap,
		    int *n, struct err *e)
{
	char buf[256];
	if (strlen(s) >= sizeof buf)
		return err_set(e, "list too long");
	strcpy(buf, s);
	*n = 0;
	char *p = buf;
	for (;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = 0;
		if (*n == cap)
			return err_set(e, "more than %d values", cap);
		if (parse_long(p, min, max, &out[*n], e) < 0)
			return -1;
		(*n)++;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}
