/* manifest: the tensors a Qwen2 model must have, from its config alone,
 * and the comparison of such a list with what a file holds.
 *
 * A manifest is a list of (name, shape). manifest_build derives the
 * expected one from a config, in the order of Hugging Face's Qwen2 files:
 *
 *   model.embed_tokens.weight                        [vocab, hidden]
 *   per layer N, model.layers.N.:
 *     input_layernorm.weight                         [hidden]
 *     self_attn.q_proj.weight, .bias                 [heads*hd, hidden], [heads*hd]
 *     self_attn.k_proj.weight, .bias                 [kv*hd, hidden], [kv*hd]
 *     self_attn.v_proj.weight, .bias                 [kv*hd, hidden], [kv*hd]
 *     self_attn.o_proj.weight                        [hidden, heads*hd]
 *     post_attention_layernorm.weight                [hidden]
 *     mlp.gate_proj.weight, mlp.up_proj.weight       [inter, hidden]
 *     mlp.down_proj.weight                           [hidden, inter]
 *   model.norm.weight                                [hidden]
 *   lm_head.weight (only when tie_word_embeddings is false) [vocab, hidden]
 *
 * Any reader of a model file (safetensors, the quantized containers) turns
 * its tensor list into a manifest with manifest_add, and manifest_diff says
 * what is missing, unexpected or of the wrong shape. dtypes are not part of
 * a manifest: a file may store any of them.
 */
#ifndef MANIFEST_H
#define MANIFEST_H

#include <stdint.h>
#include "format/config.h"
#include "core/err.h"
#include "format/safetensors.h"

struct mtensor {
	char *name;                     /* owned by the manifest */
	int ndim;
	int64_t shape[ST_MAX_DIMS];
};

struct manifest {
	int n, cap;
	struct mtensor *t;
};

/* Where a tensor's parameters go, for breakdowns: by name, so that it works
 * on any file. */
enum mrole { MROLE_EMBED, MROLE_ATTN, MROLE_MLP, MROLE_NORM, MROLE_OTHER, MROLE_N };

/* An empty manifest (nothing to free until something is added). */
void manifest_init(struct manifest *m);

/* Appends a copy of (name, shape). 0, or -1 with "out of memory". */
int manifest_add(struct manifest *m, const char *name, int ndim,
		 const int64_t *shape, struct err *e);

/* The expected manifest of the Qwen2 model described by c, into an
 * initialized, empty m. 0, or -1 on allocation failure or when its
 * parameters total more than 2^63 (so every sum of them fits a uint64). */
int manifest_build(struct manifest *m, const struct model_config *c, struct err *e);

/* The tensors of a safetensors file, in file order, into an empty m. */
int manifest_from_st(struct manifest *m, const struct st_file *f, struct err *e);

/* Frees what m owns and leaves it empty. */
void manifest_free(struct manifest *m);

/* Elements of one tensor (1 for a scalar). The shapes come from a config
 * or a validated file, so the product fits in 64 bits. */
uint64_t mtensor_params(const struct mtensor *t);

/* The shape as text, "[151936, 896]", in buf (which it returns); a
 * shape of ST_MAX_DIMS 64-bit extents fits in MTENSOR_SHAPE_STR bytes. */
enum { MTENSOR_SHAPE_STR = 16 + 22 * ST_MAX_DIMS };
const char *mtensor_shape_str(const struct mtensor *t, char buf[MTENSOR_SHAPE_STR]);

/* Elements of all tensors. */
uint64_t manifest_params(const struct manifest *m);

/* The role of a tensor by its name: embed_tokens and lm_head are
 * embeddings; self_attn is attention; mlp is MLP; *norm* is norms. */
enum mrole mrole_of(const char *name);

/* "embeddings", "attention", "mlp", "norms", "other". */
const char *mrole_name(enum mrole r);

enum mdiff_kind { MDIFF_MISSING, MDIFF_UNEXPECTED, MDIFF_SHAPE };

struct mdiff {
	enum mdiff_kind kind;
	const struct mtensor *want;  /* NULL for MDIFF_UNEXPECTED */
	const struct mtensor *have;  /* NULL for MDIFF_MISSING */
};

/* Compares have against want. *out gets the differences (the caller frees
 * it; NULL when there are none) and *n their count: first missing and
 * wrong-shape tensors in want's order, then unexpected ones in have's order.
 * Pointers in *out point into want and have. A name present twice in have
 * counts once; its second copy is unexpected. 0, or -1 on allocation
 * failure. */
int manifest_diff(const struct manifest *want, const struct manifest *have,
		  struct mdiff **out, int *n, struct err *e);

/* Whether the tensors of the file name (have) are those its config implies
 * (want; config names it in messages: "config.json", "its GGUF
 * hyperparameters"), for the readers that refuse a file that is not: 0,
 * or -1 with e naming the first difference, "NAME: tensor 'X': missing (3
 * differences from config.json)", "... unexpected (...)", "NAME: tensor
 * 'X': shape [4096, 256], config.json implies [100, 256]" (a name with
 * control characters quoted and escaped). st-inspect lists them all. */
int manifest_check(const struct manifest *want, const struct manifest *have,
		   const char *name, const char *config, struct err *e);

#endif
