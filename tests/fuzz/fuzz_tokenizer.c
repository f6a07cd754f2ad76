/* fuzz_tokenizer: tok_parse (tokenizer.json loading) on arbitrary bytes;
 * the seeds are small tokenizers (a few hundred ids) so each run is fast.
 * An accepted tokenizer gives every id in [0, n) bytes or none, and
 * encodes a fixed ASCII text to ids that decode back to it. */
#include "fuzz.h"
#include "text/tokenizer.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so ASan sees any read past the end
	 * (a mapping would hide it in the last page's zeros). */
	unsigned char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct err e;
	struct tokenizer *t = tok_parse(buf, size, "tokenizer.json", &e);
	free(buf);
	if (!t) {
		fuzz_check_msg(&e, "tokenizer.json");
		return 0;
	}
	int32_t n = tok_n_ids(t);
	FUZZ_CHECK(n > 0);
	for (int32_t id = -1; id <= n; id++) {
		size_t len;
		const unsigned char *b = tok_bytes(t, id, &len);
		FUZZ_CHECK(b || !tok_is_special(t, id));
		if (id < 0 || id == n)
			FUZZ_CHECK(!b);
	}
	static const unsigned char text[] = "Hello, world! 123 it's\n\tdone  <|im_end|>";
	struct idvec ids = { 0 };
	size_t bad = 1;
	FUZZ_CHECK(tok_encode(t, text, sizeof text - 1, 0, &ids, &bad, &e) == 0);
	FUZZ_CHECK(bad == 0);
	unsigned char out[sizeof text];
	size_t o = 0;
	for (size_t i = 0; i < ids.n; i++) {
		size_t len;
		const unsigned char *b = tok_bytes(t, ids.v[i], &len);
		FUZZ_CHECK(b && len <= sizeof text - 1 - o);
		memcpy(out + o, b, len);
		o += len;
	}
	FUZZ_CHECK(o == sizeof text - 1 && memcmp(out, text, o) == 0);
	idvec_free(&ids);
	tok_free(t);
	return 0;
}
