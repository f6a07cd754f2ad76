/* fuzz_safetensors: st_parse (the safetensors header and its validation)
 * on arbitrary bytes. An accepted file's tensors tile its data section
 * exactly, each view inside the input. */
#include "fuzz.h"
#include "format/safetensors.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_file f;
	struct err e;
	if (st_parse(&f, data, size, "fuzz.safetensors", &e) < 0) {
		fuzz_check_msg(&e, "fuzz.safetensors");
		return 0;
	}
	FUZZ_CHECK(f.data_offset == 8 + f.header_len && f.data_offset <= size);
	uint64_t pos = 0;
	for (int i = 0; i < f.ntensors; i++) {
		const struct st_tensor *t = &f.tensors[i];
		FUZZ_CHECK(t->begin == pos && t->end >= t->begin);
		FUZZ_CHECK((t->end - t->begin) * 8 == t->nelem * st_dtype_bits(t->dtype));
		FUZZ_CHECK(t->ndim >= 0 && t->ndim <= ST_MAX_DIMS);
		FUZZ_CHECK((const uint8_t *)t->data == data + f.data_offset + t->begin);
		if (t->end > t->begin) /* the first and last bytes are readable */
			FUZZ_CHECK(((const uint8_t *)t->data)[0] + 1 > 0 &&
				   ((const uint8_t *)t->data)[t->end - t->begin - 1] + 1 > 0);
		FUZZ_CHECK(st_find(&f, t->name) != NULL);
		pos = t->end;
	}
	FUZZ_CHECK(pos == size - f.data_offset);
	st_close(&f);
	return 0;
}
