/* jsonutil: the checks cJSON leaves to its caller, shared by the readers of
 * JSON files (safetensors headers, config.json, ...).
 *
 * cJSON parses, but it accepts duplicate keys (GetObjectItem returns the
 * first, silently), it does not validate UTF-8 in strings, and its error
 * position is a global. These helpers fill those gaps, and format untrusted
 * names and values so that a message stays one printable line.
 */
#ifndef JSONUTIL_H
#define JSONUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <cJSON.h>
#include "core/err.h"

/* Parses text[0..len) (which must be followed by a NUL at text[len]) as
 * one JSON value followed only by whitespace. On success *out is the tree;
 * the caller frees it with cJSON_Delete. On failure fills e with
 * "WHAT: not valid JSON (line L, column C)" (without "WHAT: " when what
 * is NULL). */
int json_parse_text(cJSON **out, const char *text, size_t len, const char *what,
		    struct err *e);

/* The first member of object obj whose key an earlier member already has,
 * or NULL. O(n log n). When it cannot allocate its scratch index it
 * returns obj's first member: the caller refuses the input rather than
 * trusting it unchecked. */
const cJSON *json_find_duplicate(const cJSON *obj);

/* True when s is well-formed UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF). */
bool utf8_valid(const char *s);

/* Writes s into buf[0..cap) in single quotes for a message: control
 * characters, quotes, backslashes and bytes that are not valid UTF-8 as
 * \xNN, cut with "..." when longer than cap allows. Returns buf. */
char *json_quote(char *buf, size_t cap, const char *s);

/* Writes a short rendering of the value v for a message: a number as
 * %.17g, a string quoted as json_quote, otherwise "true", "false", "null",
 * "an array" or "an object". Returns buf. */
char *json_print_scalar(char *buf, size_t cap, const cJSON *v);

#endif
