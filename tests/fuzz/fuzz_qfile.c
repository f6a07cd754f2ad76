/* fuzz_qfile: qfile_parse (the quantized container: header, sections,
 * embedded configs, index, scheme, manifest) on arbitrary bytes. An
 * accepted container's views lie inside the input. */
#include "fuzz.h"
#include "format/qfile.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy aligned as a mapping would be (scales are read as floats);
	 * page-aligned also makes an munmap of it by qfile_close take effect
	 * and show, where qfile_close must unmap nothing. */
	unsigned char *buf = aligned_alloc(4096, size / 4096 * 4096 + 4096);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	struct qfile f;
	struct err e;
	if (qfile_parse(&f, buf, size, "fuzz.q8", &e) < 0) {
		fuzz_check_msg(&e, "fuzz.q8");
		free(buf);
		return 0;
	}
	FUZZ_CHECK(f.level == 8 || f.level == 4);
	for (int i = 0; i < f.ntensors; i++) {
		const struct qtensor *t = &f.t[i];
		const unsigned char *d = t->data;
		FUZZ_CHECK(d >= buf && t->data_len <= size - (size_t)(d - buf));
		if (t->data_len)
			FUZZ_CHECK(d[t->data_len - 1] + 1 > 0);
		if (t->scales) {
			uint64_t sl = qfile_scales_len(t->type, t->shape, f.group_size);
			const unsigned char *s = (const unsigned char *)t->scales;
			FUZZ_CHECK(s >= buf && sl <= size - (size_t)(s - buf));
			FUZZ_CHECK(isfinite(t->scales[sl / 4 - 1]));
		}
		FUZZ_CHECK(qfile_find(&f, t->name) != NULL);
	}
	qfile_close(&f);
	buf[0] ^= 1;  /* still ours */
	free(buf);
	return 0;
}
