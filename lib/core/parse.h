/* parse: checked number parsing for flags and text streams.
 *
 * Never atoi/atof: each parser rejects empty strings, trailing garbage,
 * overflow and values outside [min, max], and says which in the error
 * ("not a number", "out of range [0, 1]"). The caller adds the name of the
 * flag or file and line.
 */
#ifndef PARSE_H
#define PARSE_H

#include "core/err.h"

/* Parses a whole decimal integer in [min, max] into *out. */
int parse_long(const char *s, long min, long max, long *out, struct err *e);

/* Parses a whole finite decimal floating-point number in [min, max]. */
int parse_double(const char *s, double min, double max, double *out, struct err *e);

/* Parses a comma-separated list of integers in [min, max] ("1,2,4") into
 * out[0..cap), setting *n. Rejects empty items and more than cap items. */
int parse_long_list(const char *s, long min, long max, long *out, int cap,
		    int *n, struct err *e);

#endif
