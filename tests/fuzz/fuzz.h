/* fuzz: what the libFuzzer targets (tests/fuzz/fuzz_*.c) share.
 *
 * Each target feeds one parser arbitrary bytes and checks, beyond the
 * sanitizers' own checks, the contract that holds for every input: a
 * refusal is one printable line that names the input; an acceptance obeys
 * the invariants the parser's header promises. A broken contract aborts,
 * which libFuzzer reports as a crash and saves the input.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"

/* Aborts with a message when cond is false (assert() would vanish under
 * NDEBUG). */
#define FUZZ_CHECK(cond)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: broken: %s\n", __FILE__,      \
				__LINE__, #cond);                             \
			abort();                                              \
		}                                                             \
	} while (0)

/* A refusal's message: non-empty, one line, no control characters, and
 * starting with "name: " when name is given. */
static inline void fuzz_check_msg(const struct err *e, const char *name)
{
	size_t n = strnlen(e->msg, sizeof e->msg);
	FUZZ_CHECK(n > 0 && n < sizeof e->msg);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)e->msg[i] >= 0x20 && e->msg[i] != 0x7f);
	if (name) {
		size_t k = strlen(name);
		FUZZ_CHECK(strncmp(e->msg, name, k) == 0 && e->msg[k] == ':');
	}
}

#endif
