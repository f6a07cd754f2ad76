/* fuzz_tokenizer: the tokenizer on arbitrary bytes, two ways, chosen by the
 * first byte of the input:
 *
 *   even: the rest is text, encoded with the bundled Qwen2.5 tokenizer
 *         (data/qwen2.5-0.5b-instruct/tokenizer.json, from the repository
 *         root, where scripts/fuzz runs; odd second bit: TOK_NO_SPECIAL).
 *         Encoding never fails, every id is a token, and when no byte of
 *         the text can start a character from U+0300 on (so that NFC has
 *         nothing to change), decoding gives back exactly the text, valid
 *         UTF-8 or not.
 *   odd:  the rest is a tokenizer.json (tok_parse): refused with one line
 *         naming it, or loaded, and then a fixed text encodes to ids that
 *         are all tokens.
 */
#include "fuzz.h"
#include "tokenizer.h"

#include <stdint.h>

#define BUNDLED "data/qwen2.5-0.5b-instruct/tokenizer.json"

static void check_ids(const struct tokenizer *t, const struct idvec *ids,
		      const uint8_t *text, size_t n, int exact)
{
	size_t at = 0;
	int same = 1;
	for (size_t i = 0; i < ids->n; i++) {
		size_t len;
		const unsigned char *b = tok_bytes(t, ids->v[i], &len);
		FUZZ_CHECK(b != NULL);
		same = same && at + len <= n && memcmp(text + at, b, len) == 0;
		at += len;
	}
	if (exact)
		FUZZ_CHECK(same && at == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tokenizer *bundled;
	struct err e;
	struct idvec ids = { 0 };
	if (size == 0)
		return 0;
	const uint8_t *rest = data + 1;
	size_t n = size - 1;

	if (data[0] % 2 == 0) {
		if (!bundled && !(bundled = tok_load(BUNDLED, &e))) {
			fprintf(stderr, "fuzz_tokenizer: %s (run from the repository root)\n", e.msg);
			abort();
		}
		int flags = data[0] & 2 ? TOK_NO_SPECIAL : 0, stable = 1;
		for (size_t i = 0; i < n; i++)
			stable = stable && !(rest[i] >= 0xCC && rest[i] <= 0xF4);
		size_t bad;
		FUZZ_CHECK(tok_encode(bundled, rest, n, flags, &ids, &bad, &e) == 0);
		FUZZ_CHECK(bad <= n);
		check_ids(bundled, &ids, rest, n, stable);
		idvec_free(&ids);
		return 0;
	}

	struct tokenizer *t = tok_parse("tokenizer.json", rest, n, &e);
	if (!t) {
		fuzz_check_msg(&e, "tokenizer.json");
		return 0;
	}
	static const char text[] = "Hello <|im_start|> w\xc3\xb6rld\xff 123\n\n";
	FUZZ_CHECK(tok_encode(t, (const uint8_t *)text, sizeof text - 1, 0, &ids, NULL, &e) == 0);
	check_ids(t, &ids, (const uint8_t *)text, sizeof text - 1, 0);
	idvec_free(&ids);
	tok_free(t);
	return 0;
}
