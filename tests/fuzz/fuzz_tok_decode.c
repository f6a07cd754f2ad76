/* fuzz_tok_decode: decoding arbitrary id lists with the bundled Qwen2.5
 * tokenizer, the way `tok decode` streams them: each id's bytes
 * (tok_bytes; none for an id outside the vocabulary) through the UTF-8
 * holder (lib/core/utf8.h) in pieces. The input is the ids as little-endian
 * 32-bit integers. What comes out, plus the final flush, is exactly the
 * concatenation of the tokens' bytes, and nothing is held back that could
 * not still become a character. */
#include "fuzz.h"
#include "core/utf8.h"

#include <stdint.h>

static struct tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	tok = fuzz_tokenizer();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size / 4, cap = 0, total = 0, o = 0;
	for (size_t i = 0; i < n; i++) {
		int32_t id;
		memcpy(&id, data + 4 * i, 4);
		size_t len;
		const unsigned char *b = tok_bytes(tok, id, &len);
		if (id < 0 || id >= tok_n_ids(tok))
			FUZZ_CHECK(!b);
		if (b)
			cap += len;
	}
	unsigned char *want = malloc(cap + 1), *got = malloc(cap + 4);
	FUZZ_CHECK(want && got);
	struct utf8_hold h = { 0 };
	for (size_t i = 0; i < n; i++) {
		int32_t id;
		memcpy(&id, data + 4 * i, 4);
		size_t len;
		const unsigned char *b = tok_bytes(tok, id, &len);
		if (!b)
			continue;
		memcpy(want + total, b, len);
		total += len;
		unsigned char out[64 + 3];
		while (len > 0) {  /* in pieces, as tok decode does for long tokens */
			size_t k = len < 64 ? len : 64;
			size_t m = utf8_hold_push(&h, b, k, out);
			FUZZ_CHECK(m <= k + 3 && h.n >= 0 && h.n <= 3);
			memcpy(got + o, out, m);
			o += m;
			b += k;
			len -= k;
		}
		FUZZ_CHECK(o + (size_t)h.n == total);
		if (h.n > 0) {  /* held: a valid character's incomplete start */
			int32_t cp;
			FUZZ_CHECK(utf8_decode(h.buf, (size_t)h.n, &cp) == 0);
			FUZZ_CHECK(h.buf[0] >= 0xC2 && h.buf[0] <= 0xF4);
		}
	}
	o += utf8_hold_flush(&h, got + o);
	FUZZ_CHECK(o == total && memcmp(got, want, total) == 0);
	free(want);
	free(got);
	return 0;
}
