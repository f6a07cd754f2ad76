/* config: a model's config.json and generation_config.json, typed and
 * checked.
 *
 * Every shape the engine uses comes from here; nothing about Qwen2.5-0.5B is
 * hard-coded. Invariants are checked at load: positive sizes, hidden divisible
 * by heads, heads divisible by KV heads, head_dim even (RoPE pairs).
 * What the engine does not implement is refused rather than ignored:
 * model_type other than "qwen2", hidden_act other than "silu",
 * use_sliding_window true (each checked only when the key is present).
 * bos and eos ids must lie in [0, vocab_size). num_hidden_layers is at
 * most CFG_MAX_LAYERS, so that a config of a few bytes cannot make every
 * reader of a model build a manifest of billions of tensors (the deepest
 * published models have about 128). head_dim is always
 * hidden_size / num_attention_heads, as in transformers' Qwen2.
 */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdbool.h>
#include "core/err.h"

#define CFG_MAX_EOS 8
#define CFG_MAX_LAYERS 4096

struct model_config {
	int vocab_size;
	int hidden_size;
	int intermediate_size;
	int n_layers;          /* num_hidden_layers */
	int n_heads;           /* num_attention_heads */
	int n_kv_heads;        /* num_key_value_heads */
	int head_dim;          /* hidden_size / n_heads */
	int max_positions;     /* max_position_embeddings */
	double rope_theta;
	double rms_norm_eps;
	bool tie_embeddings;   /* tie_word_embeddings */
	int bos_id;            /* -1 when absent */
	int n_eos;             /* eos_token_id: one id or a list */
	int eos_ids[CFG_MAX_EOS];
};

/* Sampling defaults. A generation_config.json is read as transformers
 * reads it: top_k 50 when absent, and without "do_sample": true the
 * argmax (temperature 0, which the sampler takes as greedy); its other
 * absent keys keep the values set by gen_config_default. */
struct gen_config {
	int n_eos;
	int eos_ids[CFG_MAX_EOS];
	double temperature;        /* 1.0 */
	int top_k;                 /* 0 = off */
	double top_p;              /* 1.0 = off */
	double min_p;              /* 0 = off */
	double repetition_penalty; /* 1.0 = off */
	/* Whose defaults these are when the file had no sampling settings
	 * (a GGUF file without general.sampling.*), for -v; NULL when the
	 * values are the file's own or gen_config_default's. */
	const char *origin;
};

/* Parses config.json at path. Errors name the file and key:
 * "data/x/config.json: num_attention_heads: missing". */
int config_load(struct model_config *c, const char *path, struct err *e);

/* Same from a JSON text in memory (for the fuzzer and the containers). */
int config_parse(struct model_config *c, const char *json, size_t len,
		 const char *name, struct err *e);

/* Defaults, then generation_config.json at path. The EOS ids default to the
 * model's. On failure g may be partly updated. */
void gen_config_default(struct gen_config *g, const struct model_config *c);
int gen_config_load(struct gen_config *g, const char *path, struct err *e);
int gen_config_parse(struct gen_config *g, const char *json, size_t len,
		     const char *name, struct err *e);

#endif
