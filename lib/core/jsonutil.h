/* jsonutil: strict JSON for every reader of JSON files (safetensors
 * headers, config.json, generation_config.json, tokenizer.json,
 * tokenizer_config.json, chat messages), and the checks cJSON leaves to
 * its caller.
 *
 * cJSON is lenient: it takes raw control characters and bytes that are not
 * UTF-8 inside strings, lone surrogate escapes, "\u0000" (which cuts a C
 * string short), numbers such as "01", "1." or "1e999", and it forgets how
 * a number was written, so "24.0" passes where an integer is wanted. So
 * every text is first checked against RFC 8259 by json_validate, the one
 * validator, and json_parse_text keeps each number's literal so that
 * json_integer can take integers exactly as written. cJSON also accepts
 * duplicate keys (GetObjectItem returns the first, silently, where jq and
 * Python take the last): json_validate refuses them, so every reader sees
 * the one meaning. cJSON's error position is a global; the messages here
 * give line and column, and json_quote formats untrusted names and values
 * so that a message stays one printable line.
 */
#ifndef JSONUTIL_H
#define JSONUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cJSON.h>
#include "core/err.h"

/* The deepest nesting of arrays and objects accepted (real files nest a
 * few levels; cJSON's own limit is 1000). */
#define JSON_MAX_DEPTH 128

/* Checks that text[0..len) is one JSON value (RFC 8259), with only
 * whitespace around it: strings with no raw control character (NUL
 * included), valid UTF-8 (no overlong form, surrogate or code point past
 * U+10FFFF), escapes from the RFC's list, each \uD800-\uDBFF followed by
 * a \uDC00-\uDFFF and no lone low one, no \u0000 (C strings cannot hold
 * it); numbers in the RFC's grammar and within a double's range; the
 * literals true, false, null; nesting at most JSON_MAX_DEPTH; no key twice
 * in one object (compared after unescaping, so "a" and "\u0061" are the
 * same; the later one is reported). On failure
 * fills e with "WHAT: not valid JSON (line L, column C): REASON" (without
 * "WHAT: " when what is NULL); L and C count lines and bytes from 1. */
int json_validate(const char *text, size_t len, const char *what, struct err *e);

/* json_validate, then parses text[0..len) (any bytes: it need not end in a
 * NUL, parsing works on a copy) with cJSON. On success *out is the tree, whose number
 * nodes carry their literal as written in valuestring (for json_integer
 * and messages); the caller frees it with cJSON_Delete. On failure fills e
 * as json_validate does. */
int json_parse_text(cJSON **out, const char *text, size_t len, const char *what,
		    struct err *e);

/* A number of a tree from json_parse_text written as an integer: digits
 * with an optional minus, no fraction or exponent ("24", not "24.0" or
 * "2.4e1"). Returns 0 and stores it in *out (saturated at INT64_MIN or
 * INT64_MAX when it does not fit), or -1 when v is not such a number. */
int json_integer(const cJSON *v, int64_t *out);

/* Writes x to f as a JSON number with 9 significant digits (a float's
 * round trip), or null when x is not finite: JSON has no inf or NaN. */
void json_write_float(FILE *f, double x);

/* True when s is well-formed UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF). */
bool utf8_valid(const char *s);

/* Writes s into buf[0..cap) in single quotes for a message: control
 * characters, quotes, backslashes and bytes that are not valid UTF-8 as
 * \xNN, cut with "..." when longer than cap allows. Returns buf. */
char *json_quote(char *buf, size_t cap, const char *s);

/* Writes a short rendering of the value v for a message: a number as it
 * was written (as %.17g when the tree did not come from json_parse_text),
 * a string quoted as json_quote, otherwise "true", "false", "null", "an
 * array" or "an object". Returns buf. */
char *json_print_scalar(char *buf, size_t cap, const cJSON *v);

#endif
