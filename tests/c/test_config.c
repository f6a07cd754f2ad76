/* config.json and generation_config.json: the bundled files parse to the
 * values written in them, and bad ones are refused with the key named. */
#include "check.h"
#include "format/config.h"

#include <string.h>

static void test_qwen(void)
{
	struct model_config c;
	struct gen_config g;
	struct err e;
	int rc = config_load(&c, "data/qwen2.5-0.5b-instruct/config.json", &e);
	CHECK(rc == 0, "qwen config: %s", rc ? e.msg : "");
	CHECK(c.vocab_size == 151936 && c.hidden_size == 896 &&
	      c.intermediate_size == 4864 && c.n_layers == 24 && c.n_heads == 14 &&
	      c.n_kv_heads == 2 && c.head_dim == 64 && c.max_positions == 32768,
	      "qwen sizes");
	CHECK(c.rope_theta == 1000000.0 && c.rms_norm_eps == 1e-6, "qwen rope, eps");
	CHECK(c.tie_embeddings && c.bos_id == 151643 && c.n_eos == 1 &&
	      c.eos_ids[0] == 151645, "qwen tied, bos, eos");

	gen_config_default(&g, &c);
	CHECK(g.n_eos == 1 && g.eos_ids[0] == 151645 && g.temperature == 1.0 &&
	      g.top_k == 0 && g.top_p == 1.0 && g.repetition_penalty == 1.0,
	      "defaults take the model's eos, sampling off");
	rc = gen_config_load(&g, "data/qwen2.5-0.5b-instruct/generation_config.json", &e);
	CHECK(rc == 0, "qwen generation config: %s", rc ? e.msg : "");
	CHECK(g.n_eos == 2 && g.eos_ids[0] == 151645 && g.eos_ids[1] == 151643,
	      "eos as a list");
	CHECK(g.temperature == 0.7 && g.top_k == 20 && g.top_p == 0.8 &&
	      g.repetition_penalty == 1.1 && g.min_p == 0, "qwen sampling settings");
}

static void test_small(void)
{
	struct model_config c;
	struct err e;
	int rc = config_load(&c, "data/shakespeare-tiny/config.json", &e);
	CHECK(rc == 0 && c.hidden_size == 64 && c.n_layers == 4 && c.head_dim == 16 &&
	      c.tie_embeddings, "tiny config");
	rc = config_load(&c, "tests/fixtures/qwen-shapes/config.json", &e);
	CHECK(rc == 0 && c.vocab_size == 4096 && c.hidden_size == 256 &&
	      c.intermediate_size == 704 && c.n_layers == 2 && c.n_heads == 4 &&
	      c.n_kv_heads == 2 && c.head_dim == 64 && c.max_positions == 4096 &&
	      c.rope_theta == 10000.0 && c.rms_norm_eps == 1e-5 &&
	      !c.tie_embeddings && c.bos_id == 0 && c.n_eos == 1 && c.eos_ids[0] == 1,
	      "qwen-shapes config");
}

/* A minimal valid config with one key replaced (or removed when val is
 * NULL), parsed; returns the message or "" on success. */
static const char *try_config(const char *key, const char *val, struct err *e)
{
	static const char *keys[][2] = {
		{ "vocab_size", "100" }, { "hidden_size", "32" },
		{ "intermediate_size", "64" }, { "num_hidden_layers", "2" },
		{ "num_attention_heads", "4" }, { "num_key_value_heads", "2" },
		{ "max_position_embeddings", "128" }, { "rope_theta", "10000.0" },
		{ "rms_norm_eps", "1e-6" }, { "eos_token_id", "[1, 2]" },
	};
	char json[1024] = "{";
	int first = 1;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const char *v = strcmp(keys[i][0], key) == 0 ? val : keys[i][1];
		if (!v)
			continue;
		snprintf(json + strlen(json), sizeof json - strlen(json), "%s\"%s\": %s",
			 first ? "" : ", ", keys[i][0], v);
		first = 0;
	}
	strcat(json, "}");
	struct model_config c;
	e->msg[0] = 0;
	config_parse(&c, json, strlen(json), "c.json", e);
	return e->msg;
}

/* Each case: a JSON text and the exact message parse gives it. */
static void expect_msgs(const char *(*cases)[2], size_t n, void *out,
			int (*parse)(void *, const char *, size_t, const char *,
				     struct err *))
{
	struct err e;
	for (size_t i = 0; i < n; i++) {
		e.msg[0] = 0;
		parse(out, cases[i][0], strlen(cases[i][0]), "c.json", &e);
		CHECK(strcmp(e.msg, cases[i][1]) == 0, "%s: want \"%s\", got \"%s\"",
		      cases[i][0], cases[i][1], e.msg);
	}
}

static int parse_model(void *c, const char *json, size_t len, const char *name,
		       struct err *e)
{
	return config_parse(c, json, len, name, e);
}

static int parse_gen(void *g, const char *json, size_t len, const char *name,
		     struct err *e)
{
	return gen_config_parse(g, json, len, name, e);
}

static void test_errors(void)
{
	struct err e;
	static const char *cases[][3] = {
		{ "vocab_size", "100", "" },
		{ "num_attention_heads", NULL, "c.json: num_attention_heads: missing" },
		{ "hidden_size", "30", "c.json: hidden_size: 30 is not divisible by "
		  "num_attention_heads (4)" },
		{ "num_key_value_heads", "3", "c.json: num_attention_heads: 4 is not "
		  "divisible by num_key_value_heads (3)" },
		{ "hidden_size", "20", "c.json: hidden_size: head dimension 20 / 4 = 5 "
		  "is odd (RoPE rotates pairs)" },
		{ "vocab_size", "0", "c.json: vocab_size: 0 is out of range [1, 2147483647]" },
		{ "vocab_size", "1.5", "c.json: vocab_size: expected an integer, got 1.5" },
		/* an integer is read as written: 100.0 and 1e2 are not integers
		 * (transformers' json reader gives a float, and so refuses them) */
		{ "vocab_size", "100.0", "c.json: vocab_size: expected an integer, got 100.0" },
		{ "vocab_size", "1e2", "c.json: vocab_size: expected an integer, got 1e2" },
		{ "num_hidden_layers", "2.0", "c.json: num_hidden_layers: expected an integer, got 2.0" },
		{ "vocab_size", "99999999999999999999", "c.json: vocab_size: 99999999999999999999 "
		  "is out of range [1, 2147483647]" },
		{ "eos_token_id", "[1.0]", "c.json: eos_token_id: 1.0 is not an id in [0, 99]" },
		{ "eos_token_id", "2.0", "c.json: eos_token_id: expected an integer, got 2.0" },
		{ "vocab_size", "\"100\"", "c.json: vocab_size: expected an integer, got '100'" },
		{ "rms_norm_eps", "0", "c.json: rms_norm_eps: 0 is out of range (0, 1]" },
		/* found by fuzz_config: a manifest of 2.4e9 tensors */
		{ "num_hidden_layers", "200000000", "c.json: num_hidden_layers: 200000000 "
		  "is out of range [1, 4096]" },
		{ "eos_token_id", "[]", "c.json: eos_token_id: 0 ids (expected 1 to 8)" },
		{ "eos_token_id", "100", "c.json: eos_token_id: 100 is out of range [0, 99]" },
		{ "eos_token_id", "[1, 100]", "c.json: eos_token_id: 100 is not an id in [0, 99]" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *got = try_config(cases[i][0], cases[i][1], &e);
		CHECK(strcmp(got, cases[i][2]) == 0, "%s=%s: want \"%s\", got \"%s\"",
		      cases[i][0], cases[i][1] ? cases[i][1] : "(none)", cases[i][2], got);
	}

	struct model_config c;
	const char *bad[][2] = {
		{ "{\"a\": 1,\n \"b\" 2}", "c.json: not valid JSON (line 2, column 6): "
		  "unexpected '2', expected ':' after a key" },
		{ "[1]", "c.json: not a JSON object" },
		{ "{\"x\": 1, \"x\": 2}", "c.json: not valid JSON (line 1, column 10): duplicate key 'x'" },
		{ "", "c.json: not valid JSON (line 1, column 1): unexpected end of text, "
		  "expected a JSON value" },
		{ "{\"model_type\": \"qw\nen2\"}", "c.json: not valid JSON (line 1, column 19): "
		  "raw control character 0x0a in a string" },
	};
	expect_msgs(bad, sizeof bad / sizeof bad[0], &c, parse_model);

	struct gen_config g;
	gen_config_default(&g, &c);
	const char *gbad[][2] = {
		{ "{\"top_p\": 0}", "c.json: top_p: 0 is out of range (0, 1]" },
		{ "{\"top_k\": -1}", "c.json: top_k: -1 is out of range [0, 2147483647]" },
		{ "{\"temperature\": \"hot\"}", "c.json: temperature: expected a number, got 'hot'" },
		{ "{\"top_k\": 40.0}", "c.json: top_k: expected an integer, got 40.0" },
		{ "{\"top_k\": 1e400}", "c.json: not valid JSON (line 1, column 11): number "
		  "out of range" },
	};
	expect_msgs(gbad, sizeof gbad / sizeof gbad[0], &g, parse_gen);
}

int main(void)
{
	test_qwen();
	test_small();
	test_errors();
	return check_done("test_config");
}
