/* gguf_arch: see gguf_arch.h. */
#include "format/gguf_arch.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A required or optional integer key into an int. */
static int get_i(const struct gguf_file *f, const char *key, bool required, int lo,
		 int hi, int *out, const char *name, struct err *e)
{
	int64_t v;
	int rc = gguf_get_int(f, key, lo, hi, &v, name, e);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return required ? err_set(e, "%s: key '%s': missing", name, key) : 0;
	*out = (int)v;
	return 0;
}

/* A finite float key in (lo, hi] (lo itself allowed when closed_lo), as
 * config.c's get_double takes its config.json counterpart. */
static int get_f(const struct gguf_file *f, const char *key, double lo, bool closed_lo,
		 double hi, double *out, const char *name, struct err *e)
{
	double v;
	int rc = gguf_get_float(f, key, &v, name, e);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return 0;
	if (!isfinite(v))
		return err_set(e, "%s: key '%s': %g is not a finite number", name, key, v);
	if (!(closed_lo ? v >= lo : v > lo) || !(v <= hi))
		return err_set(e, "%s: key '%s': %g is out of range %s%g, %g]", name, key, v,
			       closed_lo ? "[" : "(", lo, hi);
	*out = v;
	return 0;
}

static int sampling(const struct gguf_file *f, struct gen_config *g, const char *name,
		    struct err *e)
{
	/* The sampler computes in float32 (sampler_params_check). */
	return get_f(f, "general.sampling.temp", 0, true, FLT_MAX, &g->temperature, name, e) < 0 ||
	       get_i(f, "general.sampling.top_k", false, 0, INT_MAX, &g->top_k, name, e) < 0 ||
	       get_f(f, "general.sampling.top_p", 0, false, 1, &g->top_p, name, e) < 0 ||
	       get_f(f, "general.sampling.min_p", 0, true, 1, &g->min_p, name, e) < 0 ||
	       get_f(f, "general.sampling.penalty_repeat", FLT_TRUE_MIN, true, FLT_MAX,
		     &g->repetition_penalty, name, e) < 0 ? -1 : 0;
}

/* Whether f's vocabulary is Qwen2.5's: the qwen2 pre-tokenizer, and the
 * special tokens Qwen2.5 added after Qwen2's (ids 151643 to 151664). */
static bool is_qwen25_vocab(const struct gguf_file *f)
{
	static const char *const special[] = {
		"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
		"<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
		"<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
		"<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
		"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
		"<|repo_name|>", "<|file_sep|>",
	};
	enum { FIRST = 151643, N = sizeof special / sizeof special[0] };
	const char *pre;
	uint64_t plen;
	struct err ignore;
	const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
	if (gguf_get_str(f, "tokenizer.ggml.pre", &pre, &plen, "", &ignore) != 0 ||
	    plen != 5 || memcmp(pre, "qwen2", 5) != 0 || !tok || tok->type != GGUF_ARRAY ||
	    tok->atype != GGUF_STRING || tok->n < FIRST + N)
		return false;
	const unsigned char *pos = tok->arr;
	for (uint64_t i = 0; i < FIRST + N; i++) {
		uint64_t len;
		const char *s = gguf_arr_str(&pos, &len);
		if (i >= FIRST && (len != strlen(special[i - FIRST]) ||
				   memcmp(s, special[i - FIRST], len) != 0))
			return false;
	}
	return true;
}

/* The sampling defaults of a file without general.sampling.*: Qwen2.5's
 * generation_config.json (data/qwen2.5-0.5b-instruct/) when the vocabulary
 * is Qwen2.5's, else llama.cpp's own defaults (common/common.h). */
static void sampling_defaults(const struct gguf_file *f, struct gen_config *g)
{
	if (is_qwen25_vocab(f)) {
		g->temperature = 0.7;
		g->top_k = 20;
		g->top_p = 0.8;
		g->min_p = 0;
		g->repetition_penalty = 1.1;
		g->origin = "Qwen2.5's generation_config.json (no general.sampling.* "
			    "in the file; the vocabulary is Qwen2.5's)";
	} else {
		g->temperature = 0.8;
		g->top_k = 40;
		g->top_p = 0.95;
		g->min_p = 0.05;
		g->repetition_penalty = 1.0;
		g->origin = "llama.cpp's defaults (no general.sampling.* in the file)";
	}
}

static int vocab_size(const struct gguf_file *f, int *v, const char *name, struct err *e)
{
	*v = 0;
	if (get_i(f, "qwen2.vocab_size", false, 1, INT_MAX, v, name, e) < 0)
		return -1;
	const struct gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
	if (!*v && tok && tok->type == GGUF_ARRAY && tok->n <= INT_MAX)
		*v = (int)tok->n;
	const struct gguf_tensor *emb = gguf_find_tensor(f, "token_embd.weight");
	if (!*v && emb && emb->ndim == 2 && emb->ne[1] <= INT_MAX)
		*v = (int)emb->ne[1];
	if (!*v)
		return err_set(e, "%s: no vocabulary size (no qwen2.vocab_size, "
			       "tokenizer.ggml.tokens or token_embd.weight)", name);
	return 0;
}

int gguf_qwen2_config(const struct gguf_file *f, const char *name,
		      struct model_config *c, struct gen_config *g, struct err *e)
{
	const char *arch;
	uint64_t alen;
	int rc = gguf_get_str(f, "general.architecture", &arch, &alen, name, e);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return err_set(e, "%s: key 'general.architecture': missing", name);
	if (alen != 5 || memcmp(arch, "qwen2", 5) != 0) {
		char a[40];
		snprintf(a, sizeof a, "%.*s", alen > 32 ? 32 : (int)alen, arch);
		for (char *p = a; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		return err_set(e, "%s: architecture '%s' is not supported (qwen2)", name, a);
	}
	memset(c, 0, sizeof *c);
	c->bos_id = -1;
	c->rope_theta = 10000.0;
	if (get_i(f, "qwen2.embedding_length", true, 1, INT_MAX, &c->hidden_size, name, e) < 0 ||
	    get_i(f, "qwen2.feed_forward_length", true, 1, INT_MAX, &c->intermediate_size,
		  name, e) < 0 ||
	    get_i(f, "qwen2.block_count", true, 1, CFG_MAX_LAYERS, &c->n_layers, name, e) < 0 ||
	    get_i(f, "qwen2.attention.head_count", true, 1, INT_MAX, &c->n_heads, name, e) < 0 ||
	    get_i(f, "qwen2.context_length", true, 1, INT_MAX, &c->max_positions, name, e) < 0)
		return -1;
	c->n_kv_heads = c->n_heads;
	if (get_i(f, "qwen2.attention.head_count_kv", false, 1, INT_MAX, &c->n_kv_heads,
		  name, e) < 0 ||
	    get_f(f, "qwen2.rope.freq_base", 0, false, INFINITY, &c->rope_theta, name, e) < 0)
		return -1;
	c->rms_norm_eps = -1;
	if (get_f(f, "qwen2.attention.layer_norm_rms_epsilon", 0, false, 1, &c->rms_norm_eps,
		  name, e) < 0)
		return -1;
	if (c->rms_norm_eps < 0)
		return err_set(e, "%s: key 'qwen2.attention.layer_norm_rms_epsilon': missing",
			       name);
	if (c->hidden_size % c->n_heads)
		return err_set(e, "%s: key 'qwen2.embedding_length': %d is not divisible by "
			       "qwen2.attention.head_count (%d)", name, c->hidden_size, c->n_heads);
	if (c->n_heads % c->n_kv_heads)
		return err_set(e, "%s: key 'qwen2.attention.head_count': %d is not divisible "
			       "by qwen2.attention.head_count_kv (%d)", name, c->n_heads,
			       c->n_kv_heads);
	c->head_dim = c->hidden_size / c->n_heads;
	if (c->head_dim % 2)
		return err_set(e, "%s: head dimension %d is odd (RoPE rotates pairs)", name,
			       c->head_dim);
	static const char *const lens[2] = { "qwen2.attention.key_length",
					     "qwen2.attention.value_length" };
	for (int i = 0; i < 2; i++) {
		int v = c->head_dim;
		if (get_i(f, lens[i], false, 1, INT_MAX, &v, name, e) < 0)
			return -1;
		if (v != c->head_dim)
			return err_set(e, "%s: key '%s': %d is not embedding_length / head_count "
				       "(%d)", name, lens[i], v, c->head_dim);
	}
	if (vocab_size(f, &c->vocab_size, name, e) < 0)
		return -1;
	c->tie_embeddings = gguf_find_tensor(f, "output.weight") == NULL;
	int bos = -1, eos = -1, eot = -1;
	if (get_i(f, "tokenizer.ggml.bos_token_id", false, 0, c->vocab_size - 1, &bos, name,
		  e) < 0 ||
	    get_i(f, "tokenizer.ggml.eos_token_id", false, 0, c->vocab_size - 1, &eos, name,
		  e) < 0 ||
	    get_i(f, "tokenizer.ggml.eot_token_id", false, 0, c->vocab_size - 1, &eot, name,
		  e) < 0)
		return -1;
	c->bos_id = bos;
	if (eos >= 0)
		c->eos_ids[c->n_eos++] = eos;
	if (eot >= 0 && eot != eos)
		c->eos_ids[c->n_eos++] = eot;
	gen_config_default(g, c);
	bool any = false;
	for (int i = 0; i < f->nkv; i++)
		any |= strncmp(f->kv[i].key, "general.sampling.", 17) == 0;
	if (!any)
		sampling_defaults(f, g);
	return sampling(f, g, name, e);
}

/* ---- names ---- */

static const struct {
	const char *gguf, *hf;
} global_names[] = {
	{ "token_embd.weight", "model.embed_tokens.weight" },
	{ "output_norm.weight", "model.norm.weight" },
	{ "output.weight", "lm_head.weight" },
};

static const struct {
	const char *gguf, *hf;
} layer_names[] = {
	{ "attn_norm.weight", "input_layernorm.weight" },
	{ "attn_q.weight", "self_attn.q_proj.weight" },
	{ "attn_q.bias", "self_attn.q_proj.bias" },
	{ "attn_k.weight", "self_attn.k_proj.weight" },
	{ "attn_k.bias", "self_attn.k_proj.bias" },
	{ "attn_v.weight", "self_attn.v_proj.weight" },
	{ "attn_v.bias", "self_attn.v_proj.bias" },
	{ "attn_output.weight", "self_attn.o_proj.weight" },
	{ "ffn_norm.weight", "post_attention_layernorm.weight" },
	{ "ffn_gate.weight", "mlp.gate_proj.weight" },
	{ "ffn_up.weight", "mlp.up_proj.weight" },
	{ "ffn_down.weight", "mlp.down_proj.weight" },
};

#define NGLOBAL (sizeof global_names / sizeof global_names[0])
#define NLAYER (sizeof layer_names / sizeof layer_names[0])

/* The layer number after prefix in s ("blk.12.rest" -> 12, *rest = "rest"),
 * or -1: decimal, no sign, no leading zero, under CFG_MAX_LAYERS. */
static int layer_of(const char *s, const char *prefix, const char **rest)
{
	size_t k = strlen(prefix);
	if (strncmp(s, prefix, k) != 0)
		return -1;
	s += k;
	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] != '.'))
		return -1;
	long n = 0;
	while (*s >= '0' && *s <= '9' && n < CFG_MAX_LAYERS)
		n = n * 10 + (*s++ - '0');
	if (*s != '.' || n >= CFG_MAX_LAYERS)
		return -1;
	*rest = s + 1;
	return (int)n;
}

/* One direction of the mapping: from's names to to's. */
static const char *map_name(const char *name, bool to_hf, char *buf, size_t cap)
{
	for (size_t i = 0; i < NGLOBAL; i++)
		if (strcmp(name, to_hf ? global_names[i].gguf : global_names[i].hf) == 0) {
			snprintf(buf, cap, "%s", to_hf ? global_names[i].hf : global_names[i].gguf);
			return buf;
		}
	const char *rest;
	int l = layer_of(name, to_hf ? "blk." : "model.layers.", &rest);
	if (l < 0)
		return NULL;
	for (size_t i = 0; i < NLAYER; i++)
		if (strcmp(rest, to_hf ? layer_names[i].gguf : layer_names[i].hf) == 0) {
			snprintf(buf, cap, to_hf ? "model.layers.%d.%s" : "blk.%d.%s", l,
				 to_hf ? layer_names[i].hf : layer_names[i].gguf);
			return buf;
		}
	return NULL;
}

const char *gguf_to_hf(const char *gguf, char *buf, size_t cap)
{
	return map_name(gguf, true, buf, cap);
}

const char *gguf_from_hf(const char *hf, char *buf, size_t cap)
{
	return map_name(hf, false, buf, cap);
}

int gguf_torch_shape(const struct gguf_tensor *t, int64_t shape[GGUF_MAX_DIMS])
{
	for (int d = 0; d < t->ndim; d++)
		shape[d] = t->ne[t->ndim - 1 - d];
	return t->ndim;
}

int manifest_from_gguf(struct manifest *m, const struct gguf_file *f, struct err *e)
{
	for (int i = 0; i < f->ntensors; i++) {
		char buf[128];
		const char *hf = gguf_to_hf(f->t[i].name, buf, sizeof buf);
		int64_t shape[GGUF_MAX_DIMS];
		int nd = gguf_torch_shape(&f->t[i], shape);
		if (manifest_add(m, hf ? hf : f->t[i].name, nd, shape, e) < 0)
			return -1;
	}
	return 0;
}

/* ---- the tokenizer ---- */

/* A required string key equal to want. */
static int want_str(const struct gguf_file *f, const char *key, const char *want,
		    const char *name, struct err *e)
{
	const char *s;
	uint64_t n;
	int rc = gguf_get_str(f, key, &s, &n, name, e);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return err_set(e, "%s: key '%s': missing", name, key);
	if (n != strlen(want) || memcmp(s, want, n) != 0) {
		char a[40];
		snprintf(a, sizeof a, "%.*s", n > 32 ? 32 : (int)n, s);
		for (char *p = a; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		return err_set(e, "%s: key '%s': '%s' is not supported (%s)", name, key, a, want);
	}
	return 0;
}

/* A required array key of element type t. */
static const struct gguf_kv *want_array(const struct gguf_file *f, const char *key,
					enum gguf_vtype t, const char *name, struct err *e)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		err_set(e, "%s: key '%s': missing", name, key);
	else if (kv->type != GGUF_ARRAY || kv->atype != t)
		err_set(e, "%s: key '%s': expected an array of %s", name, key, gguf_vtype_name(t));
	else
		return kv;
	return NULL;
}

/* The strings of a STRING array into fresh views. */
static struct vocab_str *strings(const struct gguf_kv *kv)
{
	struct vocab_str *v = malloc(sizeof *v * ((size_t)kv->n + 1));
	const unsigned char *pos = kv->arr;
	for (uint64_t i = 0; v && i < kv->n; i++) {
		uint64_t len;
		v[i].s = gguf_arr_str(&pos, &len);
		v[i].len = (size_t)len;
	}
	return v;
}

int gguf_vocab(const struct gguf_file *f, const char *name, struct bpe_vocab *v,
	       struct err *e)
{
	memset(v, 0, sizeof *v);
	bool bos = false;
	if (want_str(f, "tokenizer.ggml.model", "gpt2", name, e) < 0 ||
	    want_str(f, "tokenizer.ggml.pre", "qwen2", name, e) < 0 ||
	    gguf_get_bool(f, "tokenizer.ggml.add_bos_token", &bos, name, e) < 0)
		return -1;
	if (bos)
		return err_set(e, "%s: key 'tokenizer.ggml.add_bos_token': true is not "
			       "supported", name);
	const struct gguf_kv *tok, *types, *merges;
	if (!(tok = want_array(f, "tokenizer.ggml.tokens", GGUF_STRING, name, e)) ||
	    !(types = want_array(f, "tokenizer.ggml.token_type", GGUF_I32, name, e)) ||
	    !(merges = want_array(f, "tokenizer.ggml.merges", GGUF_STRING, name, e)))
		return -1;
	if (types->n != tok->n)
		return err_set(e, "%s: key 'tokenizer.ggml.token_type': %" PRIu64 " types for %"
			       PRIu64 " tokens", name, types->n, tok->n);
	if (tok->n > INT32_MAX)
		return err_set(e, "%s: key 'tokenizer.ggml.tokens': %" PRIu64 " tokens (at "
			       "most 2^31 - 1)", name, tok->n);
	v->n_tokens = (size_t)tok->n;
	v->n_merges = (size_t)merges->n;
	v->tokens = strings(tok);
	v->merges = strings(merges);
	v->types = malloc(sizeof *v->types * (v->n_tokens + 1));
	if (!v->tokens || !v->merges || !v->types) {
		bpe_vocab_free(v);
		return err_set(e, "%s: out of memory", name);
	}
	for (size_t i = 0; i < v->n_tokens; i++)
		v->types[i] = (int32_t)gguf_arr_int(types, i);
	return 0;
}
