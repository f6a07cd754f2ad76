/* fuzz_api: serve's request parser (lib/serve/api.h) on arbitrary bodies,
 * for both endpoints. A refusal is one printable line with the field
 * named in param (a NUL-terminated name, at most API_PARAM_MAX bytes); an
 * acceptance holds a request within the limits: max_tokens in [0, limit],
 * at most max_stops non-empty stop strings, top_logprobs in [0, 20] and
 * only with logprobs, messages (chat) or a non-empty prompt (completions). */
#include "serve/api.h"
#include "fuzz.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct api_limits lim = {
		.max_tokens = 64, .default_tokens = 16, .max_messages = 8, .max_stops = 4,
		.defaults = { .over = { .temperature = NAN, .top_p = NAN, .min_p = NAN,
					.repetition_penalty = NAN, .top_k = -1 } },
	};
	for (int k = 0; k <= 1; k++) {
		struct api_req r;
		struct err e;
		char param[API_PARAM_MAX];
		enum api_kind kind = k ? API_COMPLETION : API_CHAT;
		if (api_parse(&r, kind, (const char *)data, size, &lim, param, &e) < 0) {
			fuzz_check_msg(&e, NULL);
			FUZZ_CHECK(strnlen(param, API_PARAM_MAX) < API_PARAM_MAX);
			api_req_free(&r);
			continue;
		}
		FUZZ_CHECK(r.max_tokens >= 0 && r.max_tokens <= lim.max_tokens);
		FUZZ_CHECK(r.n_stops <= lim.max_stops);
		for (int i = 0; i < r.n_stops; i++)
			FUZZ_CHECK(r.stops[i] && *r.stops[i]);
		FUZZ_CHECK(r.top_logprobs >= 0 && r.top_logprobs <= SLOT_MAX_TOP);
		FUZZ_CHECK(!r.top_logprobs || r.logprobs);
		/* a completion's prompt is text, or token ids (api.h) */
		FUZZ_CHECK(kind == API_CHAT ? r.n_msgs > 0 && r.n_msgs <= (size_t)lim.max_messages :
			   r.prompt ? *r.prompt != 0 : r.ids.n > 0);
		struct sampler_params p = r.sp.over;
		FUZZ_CHECK(isnan(p.temperature) || (p.temperature >= 0 && p.temperature <= 100));
		FUZZ_CHECK(isnan(p.top_p) || (p.top_p >= 0 && p.top_p <= 1));
		api_req_free(&r);
	}
	return 0;
}
