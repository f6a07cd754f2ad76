/* model: a Qwen2 model loaded for the forward pass: its config, its
 * generation defaults and a `struct model_weights` of matrix views.
 *
 * A model is a directory (config.json, model.safetensors, optionally
 * generation_config.json), the path of a .safetensors file with
 * config.json (and generation_config.json) beside it, a quantized
 * container (.q8, .q4; lib/format/qfile.h), which embeds its configs and whose
 * matrices are WT_Q8 / WT_Q4 views (the embedding and the vectors as
 * stored), or a GGUF file (lib/model/gguf_model.h). The file is mapped,
 * validated (lib/format/safetensors.h), and diffed against the manifest its config
 * implies (lib/format/manifest.h): a missing, unexpected or wrong-shape tensor is
 * an error naming it. Matrices must be BF16 or F32.
 *
 * Weights are views (`struct wmat`), bf16 read as bf16 by the kernels. Where
 * they live:
 *  - by default the file, once validated through the mapping, is read into
 *    anonymous memory the model owns (the data section 64-byte aligned):
 *    file-backed pages left untouched for a while may be dropped by the
 *    kernel and come back from disk at the next token, anonymous ones stay
 *    (docs/performance.md has the measurements);
 *  - mmap: the views point into the read-only mapping itself (no copy, no
 *    load time); a file whose tensors are not aligned to their element size
 *    is copied anyway;
 *  - f32: every matrix is widened once into float32 memory the model owns
 *    (twice the bytes of bf16; the float32 baseline); the file itself is
 *    then only read through the mapping.
 * Norm weights and biases (vectors) are always widened into a small float
 * array the model owns.
 *
 * struct model_weights is the contract with every loader: the container's
 * loader fills the same struct with WT_Q8 / WT_Q4 views, model_quantize
 * (lib/model/qmodel.h) replaces matrices of a loaded model with quantized ones,
 * and lib/model/forward.h runs whatever it holds through kern_matmul(). mmap
 * applies to containers too; f32 does not (refused).
 */
#ifndef MODEL_H
#define MODEL_H

#include <stddef.h>
#include "format/config.h"
#include "core/err.h"
#include "format/gguf.h"
#include "format/manifest.h"
#include "format/qfile.h"
#include "format/safetensors.h"
#include "kernels/weights.h"

struct layer_weights {
	const float *attn_norm;    /* [hidden] input_layernorm */
	struct wmat wq;            /* [n_heads * head_dim, hidden] */
	struct wmat wk, wv;        /* [n_kv_heads * head_dim, hidden] */
	const float *bq;           /* [n_heads * head_dim] */
	const float *bk, *bv;      /* [n_kv_heads * head_dim] */
	struct wmat wo;            /* [hidden, n_heads * head_dim], no bias */
	const float *mlp_norm;     /* [hidden] post_attention_layernorm */
	struct wmat gate, up;      /* [intermediate, hidden] */
	struct wmat down;          /* [hidden, intermediate] */
};

struct model_weights {
	struct wmat embed;              /* [vocab, hidden] */
	struct layer_weights *layers;   /* n_layers */
	const float *final_norm;        /* [hidden] */
	struct wmat lm_head;            /* [vocab, hidden]; a copy of embed when tied */
};

struct model_opts {
	int f32;   /* widen every matrix to float32 */
	int mmap;  /* use the weights through the file mapping, no copy */
};

struct model {
	struct model_config cfg;
	struct gen_config gen;
	struct model_weights w;
	/* What the model owns; model_free releases it. */
	struct st_file st;       /* the validated file (views into map or copy) */
	struct qfile *qf;        /* or the validated container (lib/format/qfile.h) */
	struct gguf_file *gg;    /* or the validated GGUF file (lib/model/gguf_model.h) */
	void *owned;             /* matrices converted at load (GGUF), or NULL */
	size_t owned_size;
	void *quant;             /* matrices quantized in memory (model_quantize) */
	void *copy;              /* anonymous copy of the file, or NULL */
	size_t copy_size;
	void *tiles;             /* integer matrices tiled by model_tile, or NULL */
	size_t tiles_size;
	void *btiles;            /* bf16 matrices tiled by model_tile_b16, or NULL */
	size_t btiles_size;
	float *vecs;             /* widened norms and biases */
	float *wide;             /* widened matrices (f32), or NULL */
	size_t wide_bytes;
	size_t weight_bytes;     /* bytes of matrices the forward pass reads */
	int copied;              /* the weights are in anonymous memory */
	char note[512];          /* what loading converted, for -v ("" when nothing) */
};

/* Loads the model at path (directory or .safetensors). Errors name the file
 * and the tensor: "m/model.safetensors: tensor 'lm_head.weight': missing".
 * On failure nothing is left to free. The caller frees with model_free. */
int model_load(struct model *m, const char *path, const struct model_opts *o,
	       struct err *e);

void model_free(struct model *m);

/* For the loaders of each kind of file (model.c, gguf_model.c). */

/* The file `name` (size bytes) read into anonymous memory the model owns
 * (m->copy), at offset pad; returns where the file's first byte went. */
unsigned char *model_anon_read(struct model *m, const char *name, size_t size,
			       size_t pad, struct err *e);

/* The same, reading only the n ranges r of the file (in bytes from its
 * start, inside size); the rest of the copy stays zero and untouched, so
 * it takes no memory. */
struct model_range {
	size_t off, len;
};
unsigned char *model_anon_read_ranges(struct model *m, const char *name, size_t size,
				      size_t pad, const struct model_range *r, int n,
				      struct err *e);

/* The generation defaults' EOS ids must be tokens of the model. */
int model_check_eos(const struct model *m, const char *name, struct err *e);

/* Every matrix of m, in one order: the embedding, each layer's q, k, v, o,
 * gate, up, down, then lm_head when untied (tied, it is the embedding).
 * w[i] points into m; names[i] is the tensor name for the scheme's rule
 * ("model.layers.*" for the layers' matrices). Returns the count, at most
 * MODEL_MATRICES(n_layers). */
#define MODEL_MATRICES(n_layers) (2 + 7 * (n_layers))
int model_matrices(struct model *m, struct wmat **w, const char **names);

/* Interleaves the rows of every float and int8 matrix
 * (lib/kernels/weights.h) when m owns its weights (copied or widened; a
 * mapping is left as the file has it) and the processor is AMD's, so that
 * decode reads each block of rows as one stream: faster on the AMD
 * processors measured, slower on Intel's, whose L2 streamer follows a
 * stream per 4 KiB page (docs/performance.md, "Row layout by vendor").
 * Where the AVX-512 kernels will run ($QWENPIPE_SIMD honoured), bf16 and
 * f16 matrices of long rows go in column panels (weights.h). The bits are the
 * same either way. The loaders
 * call it last. Returns 0, or -1 with e set (memory). */
int model_interleave(struct model *m, struct err *e);

/* Repacks every int8 and int4 matrix of m into the tiles of the
 * int8-activation kernels (lib/kernels/qtile.h), in anonymous memory m
 * owns, and gives back the pages the old layout held (the float-input
 * kernels cannot read tiles: a tiled model runs with int8 activations
 * only, lib/model/forward.h). Does nothing when m has no integer
 * matrices. Returns 0, or -1 with e set (memory). */
int model_tile(struct model *m, struct err *e);

/* The same for every bf16 matrix of m, into the tiles of the
 * bf16-activation kernels (lib/kernels/btile.h): a model so tiled runs
 * with bf16 activations only. Does nothing when m has no bf16 matrices.
 * Returns 0, or -1 with e set (memory). */
int model_tile_b16(struct model *m, struct err *e);

#endif
