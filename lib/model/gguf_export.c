/* gguf_export: see gguf_export.h.
 *
 * The metadata is the set llama.cpp's convert_hf_to_gguf.py writes for
 * Qwen2 (architecture, sizes, rope base, epsilon, file type, the gpt2/qwen2
 * tokenizer as arrays, the special ids, the chat template), plus the
 * generation defaults as general.sampling.*. Token types follow
 * tokenizer.json: its vocabulary NORMAL, added tokens CONTROL when special
 * and USER_DEFINED when not, ids up to the model's vocabulary size that
 * have no token "[PADn]" UNUSED (as llama.cpp pads them).
 */
#include "model/gguf_export.h"
#include "core/jsonutil.h"
#include "core/bf16.h"
#include "core/vocab.h"
#include "format/gguf_arch.h"
#include "format/gguf_write.h"
#include "core/outfile.h"
#include "kernels/quant.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The vocabulary of tokenizer.json as arrays over [0, n): v's strings
 * point into j's and into pads (n slots of 24 bytes). */
static int vocab_of(const cJSON *j, int n, struct bpe_vocab *v, char *pads,
		    char **pairs, const char *name, struct err *e)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
	const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
	const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
	const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
	if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges) || !cJSON_IsArray(added))
		return err_set(e, "%s: no model.vocab, model.merges or added_tokens", name);
	v->n_tokens = (size_t)n;
	v->n_merges = (size_t)cJSON_GetArraySize(merges);
	v->tokens = calloc((size_t)n + 1, sizeof *v->tokens);
	v->types = calloc((size_t)n + 1, sizeof *v->types);
	v->merges = calloc(v->n_merges + 1, sizeof *v->merges);
	size_t pair_bytes = 0;
	for (const cJSON *m = merges->child; m; m = m->next)
		if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 &&
		    cJSON_IsString(m->child) && cJSON_IsString(m->child->next))
			pair_bytes += strlen(m->child->valuestring) +
				      strlen(m->child->next->valuestring) + 2;
	*pairs = malloc(pair_bytes + 1);
	if (!v->tokens || !v->types || !v->merges || !*pairs)
		return err_set(e, "out of memory");
	for (int i = 0; i < n; i++) {
		char *p = pads + 24 * (size_t)i;
		v->tokens[i] = (struct vocab_str){ p, (size_t)snprintf(p, 24, "[PAD%d]", i) };
		v->types[i] = VOCAB_UNUSED;
	}
	for (const cJSON *t = vocab->child; t; t = t->next) {
		int id = t->valueint;
		if (!cJSON_IsNumber(t) || id < 0 || id >= n)
			return err_set(e, "%s: model.vocab: id %d is outside the model's "
				       "vocabulary (%d)", name, id, n);
		v->tokens[id] = (struct vocab_str){ t->string, strlen(t->string) };
		v->types[id] = VOCAB_NORMAL;
	}
	for (const cJSON *a = added->child; a; a = a->next) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "id");
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content");
		if (!cJSON_IsNumber(id) || !cJSON_IsString(c) || id->valueint < 0 ||
		    id->valueint >= n)
			return err_set(e, "%s: added_tokens: an entry without a valid id and "
				       "content", name);
		v->tokens[id->valueint] = (struct vocab_str){ c->valuestring, strlen(c->valuestring) };
		v->types[id->valueint] =
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special")) ? VOCAB_CONTROL
										: VOCAB_USER;
	}
	size_t k = 0, at = 0;
	for (const cJSON *m = merges->child; m; m = m->next, k++) {
		if (cJSON_IsString(m)) {
			v->merges[k] = (struct vocab_str){ m->valuestring, strlen(m->valuestring) };
			continue;
		}
		if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) != 2 || !cJSON_IsString(m->child) ||
		    !cJSON_IsString(m->child->next))
			return err_set(e, "%s: model.merges[%zu]: not \"a b\" or [a, b]", name, k);
		int len = sprintf(*pairs + at, "%s %s", m->child->valuestring,
				  m->child->next->valuestring);
		v->merges[k] = (struct vocab_str){ *pairs + at, (size_t)len };
		at += (size_t)len + 1;
	}
	return 0;
}

static void metadata(struct gguf_writer *w, const struct gguf_out_model *m,
		     const struct bpe_vocab *v, enum gguf_mix mix)
{
	const struct model_config *c = m->cfg;
	gguf_w_str(w, "general.architecture", "qwen2", 5);
	gguf_w_str(w, "general.name", m->name, strlen(m->name));
	gguf_w_u32(w, "qwen2.context_length", (uint32_t)c->max_positions);
	gguf_w_u32(w, "qwen2.embedding_length", (uint32_t)c->hidden_size);
	gguf_w_u32(w, "qwen2.block_count", (uint32_t)c->n_layers);
	gguf_w_u32(w, "qwen2.feed_forward_length", (uint32_t)c->intermediate_size);
	gguf_w_u32(w, "qwen2.attention.head_count", (uint32_t)c->n_heads);
	gguf_w_u32(w, "qwen2.attention.head_count_kv", (uint32_t)c->n_kv_heads);
	gguf_w_f32(w, "qwen2.rope.freq_base", (float)c->rope_theta);
	gguf_w_f32(w, "qwen2.attention.layer_norm_rms_epsilon", (float)c->rms_norm_eps);
	gguf_w_u32(w, "general.file_type", (uint32_t)mix);
	if (mix != GGUF_MIX_BF16 && mix != GGUF_MIX_F16)
		gguf_w_u32(w, "general.quantization_version", 2);
	gguf_w_str(w, "tokenizer.ggml.model", "gpt2", 4);
	gguf_w_str(w, "tokenizer.ggml.pre", "qwen2", 5);
	gguf_w_strs(w, "tokenizer.ggml.tokens", v->tokens, v->n_tokens);
	gguf_w_i32s(w, "tokenizer.ggml.token_type", v->types, v->n_tokens);
	gguf_w_strs(w, "tokenizer.ggml.merges", v->merges, v->n_merges);
	const int *eos = m->gen ? m->gen->eos_ids : c->eos_ids;
	if (m->gen ? m->gen->n_eos : c->n_eos)
		gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos[0]);
	if (c->bos_id >= 0)
		gguf_w_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos_id);
	gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 0);
	if (m->chat_template)
		gguf_w_str(w, "tokenizer.chat_template", m->chat_template,
			   strlen(m->chat_template));
	if (m->gen) {
		gguf_w_f32(w, "general.sampling.temp", (float)m->gen->temperature);
		gguf_w_i32(w, "general.sampling.top_k", m->gen->top_k);
		gguf_w_f32(w, "general.sampling.top_p", (float)m->gen->top_p);
		gguf_w_f32(w, "general.sampling.min_p", (float)m->gen->min_p);
		gguf_w_f32(w, "general.sampling.penalty_repeat", (float)m->gen->repetition_penalty);
	}
}

/* Whether layer i of n gets more bits in Q4_K_M and Q5_K_M (llama.cpp's
 * use_more_bits): the first and last eighth, and every third between. */
static bool more_bits(int i, int n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The type llama-quantize gives tensor gg (rows of `cols`, in layer `layer`
 * of n, -1 outside the layers) in a file of mix m; `tied` when the
 * embedding is also the LM head. The table is docs/gguf.md's. */
static enum gguf_ttype mix_type(enum gguf_mix m, const char *gg, int64_t cols, int layer, int n,
				bool tied)
{
	static const struct { enum gguf_mix m; enum gguf_ttype base, more; } mixes[] = {
		{ GGUF_MIX_F16, GGML_F16, GGML_F16 },
		{ GGUF_MIX_BF16, GGML_BF16, GGML_BF16 },
		{ GGUF_MIX_Q8_0, GGML_Q8_0, GGML_Q8_0 },
		{ GGUF_MIX_Q4_0, GGML_Q4_0, GGML_Q4_0 },
		{ GGUF_MIX_Q4_K_M, GGML_Q4_K, GGML_Q6_K },
		{ GGUF_MIX_Q5_K_M, GGML_Q5_K, GGML_Q6_K },
		{ GGUF_MIX_Q6_K, GGML_Q6_K, GGML_Q6_K },
	};
	size_t k = 0;
	while (mixes[k].m != m)
		k++;
	enum gguf_ttype t = mixes[k].base;
	bool head = !strcmp(gg, "output.weight") || (tied && !strcmp(gg, "token_embd.weight"));
	if (t == GGML_F16 || t == GGML_BF16 || t == GGML_Q8_0)
		return t;
	if (head)  /* Q6_K, or Q8_0 when the rows do not fill the base type's blocks */
		t = cols % (int64_t)gguf_ttype_block(t) ? GGML_Q8_0 : GGML_Q6_K;
	else if (layer >= 0 && (strstr(gg, ".attn_v.") || strstr(gg, ".ffn_down.")) &&
		 more_bits(layer, n))
		t = mixes[k].more;
	/* rows that are not a whole number of blocks (256 weights for the
	 * K-quants): a type of blocks of 32, else F16 */
	if (cols % (int64_t)gguf_ttype_block(t))
		t = t == GGML_Q4_K ? GGML_Q5_0 : t == GGML_Q5_K ? GGML_Q5_1 : GGML_Q8_0;
	if (cols % (int64_t)gguf_ttype_block(t))
		t = GGML_F16;
	return t;
}

/* The type tensor t (GGUF name gg) is stored as. */
static enum gguf_ttype type_of(const struct gguf_out_model *m, const struct st_tensor *t,
			       const char *gg, enum gguf_mix mix)
{
	if (t->ndim == 1)
		return GGML_F32;
	int layer = -1;
	if (sscanf(gg, "blk.%d.", &layer) != 1)
		layer = -1;
	return mix_type(mix, gg, t->shape[t->ndim - 1], layer, m->cfg->n_layers,
			m->cfg->tie_embeddings);
}

static int tensors(struct gguf_writer *w, const struct gguf_out_model *m,
		   enum gguf_mix mix, const char *name, struct err *e)
{
	for (int i = 0; i < m->st->ntensors; i++) {
		const struct st_tensor *t = &m->st->tensors[i];
		char gg[GGUF_MAX_NAME + 64];
		if (!gguf_from_hf(t->name, gg, sizeof gg))
			return err_set(e, "%s: tensor '%s' has no GGUF name", name, t->name);
		if (t->dtype != ST_BF16 && t->dtype != ST_F32)
			return err_set(e, "%s: tensor '%s': dtype %s is not supported (BF16 or "
				       "F32)", name, t->name, st_dtype_name(t->dtype));
		int64_t ne[ST_MAX_DIMS];
		for (int d = 0; d < t->ndim; d++)
			ne[d] = t->shape[t->ndim - 1 - d];
		gguf_w_tensor(w, gg, type_of(m, t, gg, mix), t->ndim, ne);
	}
	return 0;
}

static int data(struct gguf_writer *w, FILE *fp, const struct gguf_out_model *m,
		enum gguf_mix mix, const char *name, struct err *e)
{
	for (int i = 0; i < m->st->ntensors; i++) {
		const struct st_tensor *t = &m->st->tensors[i];
		char gg[GGUF_MAX_NAME + 64];
		gguf_from_hf(t->name, gg, sizeof gg);
		enum gguf_ttype tt = type_of(m, t, gg, mix);
		float *x = malloc(sizeof(float) * (size_t)t->nelem);
		void *q = malloc((size_t)(t->nelem / gguf_ttype_block(tt) * gguf_ttype_size(tt)));
		if (!x || !q) {
			free(x);
			free(q);
			return err_set(e, "%s: out of memory", name);
		}
		for (uint64_t k = 0; k < t->nelem; k++) {
			uint16_t h;
			if (t->dtype == ST_BF16) {
				memcpy(&h, (const char *)t->data + 2 * k, 2);
				x[k] = bf16_to_f32(h);
			} else {
				memcpy(&x[k], (const char *)t->data + 4 * k, 4);
			}
		}
		int cols = (int)t->shape[t->ndim - 1];
		for (uint64_t k = 0; tt != GGML_F32 && tt != GGML_F16 && tt != GGML_BF16 &&
				     k < t->nelem; k += (uint64_t)cols)
			if (quant_row_finite(t->name, (long)(k / (uint64_t)cols), x + k, cols, e) < 0) {
				free(x);
				free(q);
				return -1;
			}
		gguf_quant(tt, x, t->nelem, q);
		int rc = gguf_w_data(w, fp, q, name, e);
		free(x);
		free(q);
		if (rc < 0)
			return -1;
	}
	return 0;
}

int gguf_write_model(const char *out, const struct gguf_out_model *m, enum gguf_mix mix,
		     struct err *e)
{
	struct bpe_vocab v = { 0 };
	struct gguf_writer w;
	gguf_w_init(&w);
	char *pads = malloc(24 * (size_t)m->cfg->vocab_size + 1), *pairs = NULL;
	cJSON *j;
	struct outfile of;
	int rc = -1;
	if (json_parse_text(&j, m->tok_json, m->tok_len, m->tok_name, e) < 0)
		goto out;
	if (!pads) {
		err_set(e, "out of memory");
		goto out;
	}
	if (vocab_of(j, m->cfg->vocab_size, &v, pads, &pairs, m->tok_name, e) < 0)
		goto out;
	metadata(&w, m, &v, mix);
	if (tensors(&w, m, mix, m->name, e) < 0 || outfile_open(&of, out, e) < 0)
		goto out;
	if (gguf_w_header(&w, of.fp, out, e) < 0 || data(&w, of.fp, m, mix, out, e) < 0) {
		outfile_abort(&of);
		goto out;
	}
	rc = outfile_commit(&of, e);
out:
	cJSON_Delete(j);
	bpe_vocab_free(&v);
	free(pads);
	free(pairs);
	gguf_w_free(&w);
	return rc;
}
