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
#include "core/err.h"
#include "text/tokenizer.h"

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

/* A refusal's message: non-empty, one line with no C0 control character
 * (a newline, a carriage return, an escape sequence would break the line or
 * the terminal), starting with "name: " when name is given. */
static inline void fuzz_check_msg(const struct err *e, const char *name)
{
	size_t n = strnlen(e->msg, sizeof e->msg);
	FUZZ_CHECK(n > 0 && n < sizeof e->msg);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)e->msg[i] >= 0x20);
	if (name) {
		size_t k = strlen(name);
		FUZZ_CHECK(strncmp(e->msg, name, k) == 0 && e->msg[k] == ':');
	}
}

/* The tokenizer of the targets that need one: $QWENPIPE_TOKENIZER, else
 * the bundled Qwen2.5 one (run from the repository root, as scripts/fuzz
 * does). Exits when it cannot be loaded. */
static inline struct tokenizer *fuzz_tokenizer(void)
{
	const char *path = getenv("QWENPIPE_TOKENIZER");
	struct err e;
	struct tokenizer *t =
		tok_load(path ? path : "data/qwen2.5-0.5b-instruct/tokenizer.json", &e);
	if (!t) {
		fprintf(stderr, "fuzz: %s\n", e.msg);
		exit(1);
	}
	return t;
}

#endif
