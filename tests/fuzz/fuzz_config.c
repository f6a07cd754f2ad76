/* fuzz_config: config_parse and gen_config_parse (config.json and
 * generation_config.json) on the same arbitrary text, then the manifest
 * every model reader derives from an accepted config. */
#include "format/config.h"
#include "fuzz.h"
#include "format/manifest.h"

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *json = (const char *)data;
	struct model_config c;
	struct gen_config g;
	struct err e;

	/* Defaults from a plausible model, so the EOS ids have a source. */
	memset(&c, 0, sizeof c);
	c.n_eos = 1;
	gen_config_default(&g, &c);
	if (gen_config_parse(&g, json, size, "generation_config.json", &e) < 0) {
		fuzz_check_msg(&e, "generation_config.json");
	} else {
		FUZZ_CHECK(g.n_eos >= 0 && g.n_eos <= CFG_MAX_EOS);
		for (int i = 0; i < g.n_eos; i++)
			FUZZ_CHECK(g.eos_ids[i] >= 0);
		FUZZ_CHECK(g.temperature >= 0 && isfinite(g.temperature));
		FUZZ_CHECK(g.top_k >= 0);
		FUZZ_CHECK(g.top_p > 0 && g.top_p <= 1);
		FUZZ_CHECK(g.min_p >= 0 && g.min_p <= 1);
		FUZZ_CHECK(g.repetition_penalty > 0 && isfinite(g.repetition_penalty));
	}

	if (config_parse(&c, json, size, "config.json", &e) < 0) {
		fuzz_check_msg(&e, "config.json");
		return 0;
	}
	FUZZ_CHECK(c.vocab_size > 0 && c.hidden_size > 0 && c.intermediate_size > 0);
	FUZZ_CHECK(c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0);
	FUZZ_CHECK(c.head_dim * c.n_heads == c.hidden_size && c.head_dim % 2 == 0);
	FUZZ_CHECK(c.n_heads % c.n_kv_heads == 0);
	FUZZ_CHECK(c.bos_id >= -1 && c.bos_id < c.vocab_size);
	FUZZ_CHECK(c.n_eos >= 0 && c.n_eos <= CFG_MAX_EOS);
	for (int i = 0; i < c.n_eos; i++)
		FUZZ_CHECK(c.eos_ids[i] >= 0 && c.eos_ids[i] < c.vocab_size);
	FUZZ_CHECK(c.rope_theta > 0 && isfinite(c.rope_theta));
	FUZZ_CHECK(c.rms_norm_eps > 0 && c.rms_norm_eps <= 1);

	struct manifest m;
	manifest_init(&m);
	if (manifest_build(&m, &c, &e) == 0) {
		FUZZ_CHECK(m.n == 2 + 12 * c.n_layers + !c.tie_embeddings);
		manifest_free(&m);
	}
	return 0;
}
