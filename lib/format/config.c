/* config: see config.h.
 *
 * Messages are "FILE: KEY: problem"; the file name is added last, by the
 * public functions, so the helpers below only name the key.
 */
#include "format/config.h"
#include "core/jsonutil.h"
#include "core/mapfile.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A whole number in [min, max] at key; absent is an error when required,
 * else *out is left alone. */
static int get_int(const cJSON *root, const char *key, long min, long max,
		   bool required, int *out, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v)
		return required ? err_set(e, "%s: missing", key) : 0;
	char buf[64];
	int64_t i;
	if (json_integer(v, &i) < 0)
		return err_set(e, "%s: expected an integer, got %s", key,
			       json_print_scalar(buf, sizeof buf, v));
	if (i < min || i > max)
		return err_set(e, "%s: %s is out of range [%ld, %ld]", key,
			       json_print_scalar(buf, sizeof buf, v), min, max);
	*out = (int)i;
	return 0;
}

/* A finite number in [min, max], or (min, max] when open_min. */
static int get_double(const cJSON *root, const char *key, double min, bool open_min,
		      double max, bool required, double *out, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v)
		return required ? err_set(e, "%s: missing", key) : 0;
	char buf[64];
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return err_set(e, "%s: expected a number, got %s", key,
			       json_print_scalar(buf, sizeof buf, v));
	double d = v->valuedouble;
	if (d < min || (open_min && d == min) || d > max)
		return err_set(e, "%s: %g is out of range %c%g, %g]", key, d,
			       open_min ? '(' : '[', min, max);
	*out = d;
	return 0;
}

static int get_bool(const cJSON *root, const char *key, bool *out, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v)
		return 0;
	char buf[64];
	if (!cJSON_IsBool(v))
		return err_set(e, "%s: expected true or false, got %s", key,
			       json_print_scalar(buf, sizeof buf, v));
	*out = cJSON_IsTrue(v);
	return 0;
}

/* When key is present, it must be the string want. */
static int expect_string(const cJSON *root, const char *key, const char *want,
			 struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v || (cJSON_IsString(v) && strcmp(v->valuestring, want) == 0))
		return 0;
	char buf[64];
	return err_set(e, "%s: %s is not supported (only '%s')", key,
		       json_print_scalar(buf, sizeof buf, v), want);
}

/* eos_token_id: absent (n = 0), one id, or a non-empty list of ids, each in
 * [0, max]. */
static int get_eos(const cJSON *root, long max, int *n, int *ids, struct err *e)
{
	const char *key = "eos_token_id";
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v)
		return 0;
	if (!cJSON_IsArray(v)) {
		*n = 1;
		return get_int(root, key, 0, max, true, &ids[0], e);
	}
	int k = cJSON_GetArraySize(v);
	if (k < 1 || k > CFG_MAX_EOS)
		return err_set(e, "%s: %d ids (expected 1 to %d)", key, k, CFG_MAX_EOS);
	int i = 0;
	for (const cJSON *x = v->child; x; x = x->next, i++) {
		char buf[64];
		int64_t id;
		if (json_integer(x, &id) < 0 || id < 0 || id > max)
			return err_set(e, "%s: %s is not an id in [0, %ld]", key,
				       json_print_scalar(buf, sizeof buf, x), max);
		ids[i] = (int)id;
	}
	*n = k;
	return 0;
}

/* Parses json[0..len) into a JSON object (json_validate refuses duplicate
 * keys). */
static int parse_object(cJSON **root, const char *json, size_t len, struct err *e)
{
	if (json_parse_text(root, json, len, NULL, e) < 0)
		return -1;
	if (!cJSON_IsObject(*root)) {
		cJSON_Delete(*root);
		*root = NULL;
		return err_set(e, "not a JSON object");
	}
	return 0;
}

static int check_model(void *out, const cJSON *r, struct err *e)
{
	struct model_config *c = out;
	memset(c, 0, sizeof *c);
	c->bos_id = -1;
	if (expect_string(r, "model_type", "qwen2", e) < 0 ||
	    expect_string(r, "hidden_act", "silu", e) < 0 ||
	    get_int(r, "vocab_size", 1, INT_MAX, true, &c->vocab_size, e) < 0 ||
	    get_int(r, "hidden_size", 1, INT_MAX, true, &c->hidden_size, e) < 0 ||
	    get_int(r, "intermediate_size", 1, INT_MAX, true, &c->intermediate_size, e) < 0 ||
	    get_int(r, "num_hidden_layers", 1, CFG_MAX_LAYERS, true, &c->n_layers, e) < 0 ||
	    get_int(r, "num_attention_heads", 1, INT_MAX, true, &c->n_heads, e) < 0 ||
	    get_int(r, "num_key_value_heads", 1, INT_MAX, true, &c->n_kv_heads, e) < 0 ||
	    get_int(r, "max_position_embeddings", 1, INT_MAX, true, &c->max_positions, e) < 0 ||
	    get_double(r, "rope_theta", 0, true, INFINITY, true, &c->rope_theta, e) < 0 ||
	    get_double(r, "rms_norm_eps", 0, true, 1, true, &c->rms_norm_eps, e) < 0 ||
	    get_bool(r, "tie_word_embeddings", &c->tie_embeddings, e) < 0 ||
	    get_int(r, "bos_token_id", 0, c->vocab_size - 1, false, &c->bos_id, e) < 0 ||
	    get_eos(r, c->vocab_size - 1, &c->n_eos, c->eos_ids, e) < 0)
		return -1;
	bool sliding = false;
	if (get_bool(r, "use_sliding_window", &sliding, e) < 0)
		return -1;
	if (sliding)
		return err_set(e, "use_sliding_window: true is not supported");
	if (c->hidden_size % c->n_heads)
		return err_set(e, "hidden_size: %d is not divisible by "
			       "num_attention_heads (%d)", c->hidden_size, c->n_heads);
	if (c->n_heads % c->n_kv_heads)
		return err_set(e, "num_attention_heads: %d is not divisible by "
			       "num_key_value_heads (%d)", c->n_heads, c->n_kv_heads);
	c->head_dim = c->hidden_size / c->n_heads;
	int head_dim = c->head_dim;
	if (get_int(r, "head_dim", 1, INT_MAX, false, &head_dim, e) < 0)
		return -1;
	if (head_dim != c->head_dim)
		return err_set(e, "head_dim: %d is not hidden_size / num_attention_heads (%d), "
			       "the only head size supported", head_dim, c->head_dim);
	/* YaRN, linear, dynamic: positions this engine would rotate
	 * otherwise than the model was trained for */
	const cJSON *rs = cJSON_GetObjectItemCaseSensitive(r, "rope_scaling");
	if (rs && !cJSON_IsNull(rs))
		return err_set(e, "rope_scaling: not supported (only RoPE without scaling: "
			       "null or absent)");
	if (c->head_dim % 2)
		return err_set(e, "hidden_size: head dimension %d / %d = %d is odd "
			       "(RoPE rotates pairs)", c->hidden_size, c->n_heads,
			       c->head_dim);
	return 0;
}

/* The checker of one kind of file: fills out from the parsed object. */
typedef int (*check_fn)(void *out, const cJSON *root, struct err *e);

static int parse_with(void *out, check_fn check, const char *json, size_t len,
		      const char *name, struct err *e)
{
	cJSON *root;
	if (parse_object(&root, json, len, e) < 0)
		return err_prefix(e, name);
	int rc = check(out, root, e);
	cJSON_Delete(root);
	return rc < 0 ? err_prefix(e, name) : 0;
}

/* Maps path and parses its text with check. */
static int load_with(void *out, check_fn check, const char *path, struct err *e)
{
	struct mapfile m;
	if (mapfile_open(&m, path, e) < 0)
		return -1;
	int rc = parse_with(out, check, (const char *)m.data, m.size, path, e);
	mapfile_close(&m);
	return rc;
}

int config_parse(struct model_config *c, const char *json, size_t len,
		 const char *name, struct err *e)
{
	return parse_with(c, check_model, json, len, name, e);
}

int config_load(struct model_config *c, const char *path, struct err *e)
{
	return load_with(c, check_model, path, e);
}

void gen_config_default(struct gen_config *g, const struct model_config *c)
{
	memset(g, 0, sizeof *g);
	g->n_eos = c->n_eos;
	memcpy(g->eos_ids, c->eos_ids, sizeof g->eos_ids);
	g->temperature = 1.0;
	g->top_k = 0;
	g->top_p = 1.0;
	g->min_p = 0;
	g->repetition_penalty = 1.0;
}

static int check_gen(void *out, const cJSON *r, struct err *e)
{
	struct gen_config *g = out;
	/* transformers' GenerationConfig: top_k 50 when not given, and
	 * without "do_sample": true the argmax */
	bool do_sample = false;
	g->top_k = 50;
	/* The ids are checked against the vocabulary where the model is
	 * known; here only that they are ids. */
	if (get_eos(r, INT_MAX, &g->n_eos, g->eos_ids, e) < 0 ||
	    get_bool(r, "do_sample", &do_sample, e) < 0 ||
	    /* The sampler computes in float32 (sampler_params_check). */
	    get_double(r, "temperature", 0, false, FLT_MAX, false, &g->temperature, e) < 0 ||
	    get_int(r, "top_k", 0, INT_MAX, false, &g->top_k, e) < 0 ||
	    get_double(r, "top_p", 0, true, 1, false, &g->top_p, e) < 0 ||
	    get_double(r, "min_p", 0, false, 1, false, &g->min_p, e) < 0 ||
	    get_double(r, "repetition_penalty", FLT_TRUE_MIN, false, FLT_MAX, false,
		       &g->repetition_penalty, e) < 0)
		return -1;
	if (!do_sample)
		g->temperature = 0;
	return 0;
}

int gen_config_parse(struct gen_config *g, const char *json, size_t len,
		     const char *name, struct err *e)
{
	return parse_with(g, check_gen, json, len, name, e);
}

int gen_config_load(struct gen_config *g, const char *path, struct err *e)
{
	return load_with(g, check_gen, path, e);
}
