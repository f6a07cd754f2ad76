/* err: see err.h. */
#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(struct err *e, const char *fmt, ...)
{
	if (!e)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	e->kind = ERR_INVALID;
	e->errnum = 0;
	return -1;
}

int err_write(struct err *e, int errnum, const char *fmt, ...)
{
	if (!e)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof e->msg)
		snprintf(e->msg + n, sizeof e->msg - (size_t)n, ": %s", strerror(errnum));
	e->kind = ERR_WRITE;
	e->errnum = errnum;
	return -1;
}

int err_prefix(struct err *e, const char *prefix)
{
	if (!e)
		return -1;
	char tmp[sizeof e->msg];
	memcpy(tmp, e->msg, sizeof tmp);
	/* Truncation is fine: the message is for a person. */
	int n = snprintf(e->msg, sizeof e->msg, "%s: ", prefix);
	if (n >= 0 && (size_t)n < sizeof e->msg)
		snprintf(e->msg + n, sizeof e->msg - (size_t)n, "%s", tmp);
	return -1;
}
