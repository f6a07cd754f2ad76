/* gguf_arch: a GGUF file of architecture qwen2 as the Qwen2 model the rest
 * of the engine knows: the config from the qwen2.* keys, the generation
 * defaults from general.sampling.*, and the tensor names and shapes of
 * Hugging Face's files (lib/format/manifest.h).
 *
 * Keys read (as llama.cpp's converter writes them):
 *   general.architecture                  "qwen2" (any other is refused by name)
 *   qwen2.embedding_length                hidden_size
 *   qwen2.feed_forward_length             intermediate_size
 *   qwen2.block_count                     num_hidden_layers
 *   qwen2.attention.head_count            num_attention_heads
 *   qwen2.attention.head_count_kv         num_key_value_heads (default: heads)
 *   qwen2.context_length                  max_position_embeddings
 *   qwen2.rope.freq_base                  rope_theta (default 10000, llama.cpp's)
 *   qwen2.attention.layer_norm_rms_epsilon  rms_norm_eps
 *   qwen2.attention.key_length, value_length  must be hidden / heads if present
 *   qwen2.vocab_size, else the length of tokenizer.ggml.tokens, else
 *     token_embd.weight's ne[1]           vocab_size
 *   tokenizer.ggml.bos_token_id, eos_token_id (and eot_token_id, also an
 *     end of generation when it differs)
 *   general.sampling.temp, top_k, top_p, min_p, penalty_repeat; a file
 *     with none of these gets Qwen2.5's generation_config.json values
 *     (temperature 0.7, top-k 20, top-p 0.8, repetition penalty 1.1) when
 *     its vocabulary is Qwen2.5's (pre-tokenizer qwen2 and Qwen2.5's
 *     special tokens at ids 151643-151664), else llama.cpp's defaults
 *     (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05); gen_config's
 *     origin says which
 * Embeddings are tied exactly when there is no output.weight.
 *
 * Tensor names: token_embd.weight = model.embed_tokens.weight,
 * output_norm.weight = model.norm.weight, output.weight = lm_head.weight,
 * and per layer blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output,
 * ffn_norm, ffn_gate, ffn_up, ffn_down} = model.layers.N.{input_layernorm,
 * self_attn.q_proj, .k_proj, .v_proj, .o_proj, post_attention_layernorm,
 * mlp.gate_proj, .up_proj, .down_proj}, with .weight or .bias. Shapes are
 * ne reversed (ne[0] is the row length, PyTorch's last dimension). For
 * qwen2 llama.cpp's converter does not permute q and k (it does for llama),
 * so the rows are Hugging Face's, in Hugging Face's order.
 */
#ifndef GGUF_ARCH_H
#define GGUF_ARCH_H

#include <stddef.h>
#include "core/vocab.h"
#include "format/config.h"
#include "format/gguf.h"
#include "format/manifest.h"

/* The config and generation defaults of f (name is used in messages):
 * "m.gguf: architecture 'llama' is not supported (qwen2)",
 * "m.gguf: key 'qwen2.block_count': missing". */
int gguf_qwen2_config(const struct gguf_file *f, const char *name,
		      struct model_config *c, struct gen_config *g, struct err *e);

/* The tokenizer's vocabulary (views into f; vocab_free frees the arrays):
 * tokenizer.ggml.model "gpt2" and tokenizer.ggml.pre "qwen2" (anything else
 * is refused by name: another pre-tokenizer splits text differently),
 * tokenizer.ggml.tokens (STRING), token_type (INT32, as many) and merges
 * (STRING); tokenizer.ggml.add_bos_token, when present, false (Qwen2 adds
 * no BOS, and neither does this engine). */
int gguf_vocab(const struct gguf_file *f, const char *name, struct bpe_vocab *v,
	       struct err *e);

/* Hugging Face's name for a GGUF tensor name into buf[cap], or NULL when
 * the name is not one of qwen2's. */
const char *gguf_to_hf(const char *gguf, char *buf, size_t cap);

/* GGUF's name for a Hugging Face tensor name, or NULL. */
const char *gguf_from_hf(const char *hf, char *buf, size_t cap);

/* The tensors of f under Hugging Face's names (names that map to none are
 * kept as they are) with PyTorch-order shapes, in file order, into an
 * empty m. */
int manifest_from_gguf(struct manifest *m, const struct gguf_file *f, struct err *e);

/* A tensor's shape in PyTorch's order (ne reversed) into shape[]; returns
 * the number of dimensions. */
int gguf_torch_shape(const struct gguf_tensor *t, int64_t shape[GGUF_MAX_DIMS]);

#endif
