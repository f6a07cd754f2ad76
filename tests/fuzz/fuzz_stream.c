/* fuzz_stream: the logits stream reader (stream_read_header, then
 * stream_read_frame to the end, and stream_skip_batch where a reader would
 * reject a draft) on arbitrary bytes through fmemopen, and the sampler on
 * each frame as sample runs it: the header's settings (any float the bytes
 * hold, tiny temperatures included), then the limit of the smallest
 * temperature. A frame that is returned has its ids inside the vocabulary;
 * a clean end is the end record or the end of the input; a draw is an id
 * inside the vocabulary whose kept probabilities are finite and sum to 1,
 * or a one-line refusal. */
#include "fuzz.h"
#include "format/stream.h"
#include "sample/sampler.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

/* One draw from logits with p: an id inside the vocabulary, or a refusal. */
static void draw(struct sampler *s, float *logits, const struct sampler_params *p,
		 uint32_t n_vocab)
{
	struct rng r;
	struct err e;
	rng_seed(&r, 1);
	int32_t id = sampler_next(s, logits, p, &r, &e);
	if (id < 0) {
		fuzz_check_msg(&e, NULL);
		return;
	}
	FUZZ_CHECK((uint32_t)id < n_vocab);
	int n;
	const struct sampler_cand *c = sampler_kept(s, &n);
	double total = 0;
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(c[i].id >= 0 && (uint32_t)c[i].id < n_vocab);
		FUZZ_CHECK(isfinite(c[i].p) && c[i].p >= 0);
		total += c[i].p;
	}
	FUZZ_CHECK(n >= 1 && fabs(total - 1) < 1e-3);
}

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
	struct sampler *smp = NULL;
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
	struct sampler_params p = {
		.temperature = sampler_f32_decimal(h.temperature), .top_k = h.top_k,
		.top_p = sampler_f32_decimal(h.top_p), .min_p = sampler_f32_decimal(h.min_p),
		.repetition_penalty = sampler_f32_decimal(h.repetition_penalty),
	};
	int sample = sampler_params_check(&p, &e) == 0;
	if (!sample)
		fuzz_check_msg(&e, NULL);
	if (sample && h.n_vocab <= 1 << 16)
		smp = sampler_new((int)h.n_vocab, &e);
	int r;
	while ((r = stream_read_frame(f, &h, &fr, "<stdin>", &e)) == 1) {
		FUZZ_CHECK(fr.pos >= 0 && fr.n_fed <= (uint32_t)fr.pos + 1);
		for (uint32_t i = 0; i < fr.n_fed; i++)
			FUZZ_CHECK(fr.fed[i] >= 0 && (uint32_t)fr.fed[i] < h.n_vocab);
		FUZZ_CHECK(fr.draft >= -1 && fr.draft < (int32_t)h.n_vocab);
		volatile float sink = fr.logits[0] + fr.logits[h.n_vocab - 1];
		(void)sink;
		if (smp) {
			sampler_clear_context(smp);
			FUZZ_CHECK(sampler_add_context(smp, fr.fed, fr.n_fed, &e) == 0);
			draw(smp, fr.logits, &p, h.n_vocab);
			struct sampler_params tiny = p;
			tiny.temperature = FLT_TRUE_MIN;
			draw(smp, fr.logits, &tiny, h.n_vocab);
		}
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
	sampler_free(smp);
	stream_frame_free(&fr);
	fclose(f);
	free(buf);
	return 0;
}
