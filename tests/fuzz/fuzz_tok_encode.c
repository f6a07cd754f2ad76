/* fuzz_tok_encode: tok_encode with the bundled Qwen2.5 tokenizer on
 * arbitrary bytes, with and without special tokens. The ids decode back to
 * the input wherever NFC leaves it alone: each run of valid UTF-8 (split at
 * the bytes that are not) already in NFC, as utf8proc says, independently
 * of the tokenizer. The count of invalid bytes is checked the same way.
 */
#include "fuzz.h"

#include <stdbool.h>
#include <stdint.h>
#include <utf8proc.h>

static struct tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	tok = fuzz_tokenizer();
	return 0;
}

/* Whether every valid run of s is NFC; *invalid gets the invalid bytes. */
static bool runs_in_nfc(const uint8_t *s, size_t n, size_t *invalid)
{
	bool nfc = true;
	*invalid = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		utf8proc_int32_t cp;
		utf8proc_ssize_t k;
		while (j < n && (k = utf8proc_iterate(s + j, (utf8proc_ssize_t)(n - j), &cp)) > 0)
			j += (size_t)k;
		if (j > i) {
			utf8proc_uint8_t *out = NULL;
			utf8proc_ssize_t r = utf8proc_map(s + i, (utf8proc_ssize_t)(j - i), &out,
							  UTF8PROC_STABLE | UTF8PROC_COMPOSE);
			nfc &= r == (utf8proc_ssize_t)(j - i) && memcmp(out, s + i, j - i) == 0;
			free(out);
		}
		if (j < n) {
			++*invalid;
			j++;
		}
		i = j;
	}
	return nfc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t invalid;
	bool nfc = runs_in_nfc(data, size, &invalid);
	for (int flags = 0; flags <= TOK_NO_SPECIAL; flags += TOK_NO_SPECIAL) {
		struct idvec ids = { 0 };
		struct err e;
		size_t bad;
		FUZZ_CHECK(tok_encode(tok, data, size, flags, &ids, &bad, &e) == 0);
		FUZZ_CHECK(bad == invalid);
		/* Every id stands for at least one byte of the NFC text, which
		 * can be longer than the input (U+0F78, 3 bytes, becomes U+0FB3
		 * U+0F80, 6), but at most 3 times (UAX #15, maximum expansion
		 * factor of NFC in UTF-8). */
		FUZZ_CHECK(ids.n <= 3 * size);
		unsigned char *out = malloc(4 * size + 1);
		FUZZ_CHECK(out != NULL);
		size_t o = 0;
		for (size_t i = 0; i < ids.n; i++) {
			size_t len;
			const unsigned char *b = tok_bytes(tok, ids.v[i], &len);
			FUZZ_CHECK(b != NULL && o + len <= 4 * size);
			memcpy(out + o, b, len);
			o += len;
		}
		if (nfc)
			FUZZ_CHECK(o == size && memcmp(out, data, size) == 0);
		free(out);
		idvec_free(&ids);
	}
	return 0;
}
