/* fuzz_chat: the chat renderer on arbitrary JSON: chat_parse, then
 * chat_render with and without the generation prompt. A rendering starts
 * with the system turn, holds every message's content and ends with the
 * generation prompt when asked. */
#include "text/chat.h"
#include "fuzz.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chat_msg *msgs;
	size_t count;
	struct err e;
	if (chat_parse((const char *)data, size, &msgs, &count, &e) < 0) {
		fuzz_check_msg(&e, NULL);
		return 0;
	}
	FUZZ_CHECK(count > 0);
	for (int gp = 0; gp <= 1; gp++) {
		char *out;
		size_t len;
		if (chat_render(msgs, count, gp, &out, &len, &e) < 0) {
			fuzz_check_msg(&e, NULL);
			continue;
		}
		FUZZ_CHECK(strlen(out) == len);
		FUZZ_CHECK(strncmp(out, "<|im_start|>system\n", 19) == 0);
		for (size_t i = 0; i < count; i++)
			FUZZ_CHECK(strstr(out, msgs[i].content) != NULL);
		static const char prompt[] = "<|im_start|>assistant\n";
		FUZZ_CHECK(!gp || (len >= sizeof prompt - 1 &&
				   strcmp(out + len - (sizeof prompt - 1), prompt) == 0));
		free(out);
	}
	chat_free(msgs, count);
	return 0;
}
