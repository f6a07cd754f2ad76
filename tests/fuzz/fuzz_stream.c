/* fuzz_stream: the logits stream reader (stream_read_header, then
 * stream_read_frame to the end, and stream_skip_batch where a reader would
 * reject a draft) on arbitrary bytes through fmemopen. A
 * frame that is returned has its ids inside the vocabulary; a clean end is
 * the end record or the end of the input. */
#include "fuzz.h"
#include "format/stream.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* fmemopen wants a writable buffer, and glibc refuses size 0. */
	unsigned char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	FILE *f = fmemopen(buf, size ? size : 1, "rb");
	FUZZ_CHECK(f != NULL);
	if (size == 0)
		fgetc(f);  /* a 1-byte stream read to its end: empty input */

	struct stream_header h;
	struct stream_frame fr = { 0 };
	struct err e;
	if (stream_read_header(f, &h, "<stdin>", &e) < 0) {
		fuzz_check_msg(&e, "<stdin>");
		goto out;
	}
	FUZZ_CHECK(h.version == STREAM_VERSION && h.dtype == 0);
	FUZZ_CHECK(h.n_vocab > 0 && h.n_eos <= STREAM_MAX_EOS);
	for (uint32_t i = 0; i < h.n_eos; i++)
		FUZZ_CHECK(h.eos_ids[i] >= 0 && (uint32_t)h.eos_ids[i] < h.n_vocab);
	FUZZ_CHECK(memchr(h.fifo_path, 0, sizeof h.fifo_path) != NULL);
	int r;
	while ((r = stream_read_frame(f, &h, &fr, "<stdin>", &e)) == 1) {
		FUZZ_CHECK(fr.pos >= 0 && fr.n_fed <= (uint32_t)fr.pos + 1);
		for (uint32_t i = 0; i < fr.n_fed; i++)
			FUZZ_CHECK(fr.fed[i] >= 0 && (uint32_t)fr.fed[i] < h.n_vocab);
		FUZZ_CHECK(fr.draft >= -1 && fr.draft < (int32_t)h.n_vocab);
		volatile float sink = fr.logits[0] + fr.logits[h.n_vocab - 1];
		(void)sink;
		/* a reader that rejects the drafts of odd positions */
		if (fr.draft >= 0 && fr.pos % 2 &&
		    stream_skip_batch(f, &h, &fr, "<stdin>", &e) < 0) {
			fuzz_check_msg(&e, "<stdin>");
			goto out;
		}
	}
	if (r < 0)
		fuzz_check_msg(&e, "<stdin>");
	else  /* a clean end: the end record, or all of the input read */
		FUZZ_CHECK(fr.ended || feof(f) || ftell(f) == (long)size);
out:
	stream_frame_free(&fr);
	fclose(f);
	free(buf);
	return 0;
}
