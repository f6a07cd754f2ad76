/* forward: the Qwen2 forward pass over a loaded model, with a KV cache.
 *
 * Per block (pre-norm): x += o(attn(rope(q(n(x))), rope(k(n(x))), v(n(x))))
 * then x += down(silu(gate(n(x))) * up(n(x))), n the block's RMSNorm; after
 * the last block the final RMSNorm and the LM head. Q, K, V have biases, O
 * has none; grouped-query attention (query head h reads KV head
 * h / (n_heads / n_kv_heads)); RoPE half-split with theta from the config;
 * the causal mask includes the diagonal.
 *
 * A call of n ids runs them at positions n_past .. n_past + n - 1 in chunks
 * of up to `batch` tokens: each projection of a chunk is one matrix product
 * over all its tokens (kern_matmul, lib/kernels/matmul.h: a GEMM, not T
 * matvecs); one token is a matvec. Keys are rotated once when they enter the cache; attention reads
 * the filled part only.
 *
 * Determinism: every output element is one canonical dot product
 * (lib/kernels/kernels.h) computed by one thread, so the logits are bitwise the
 * same for any thread count, any SIMD level and any chunking of the same
 * ids.
 *
 * Threads: one pool (lib/core/pool.h) made at init; work is split by output rows
 * (matrix products, LM head) or by (token, head) (attention). Every product
 * runs on our own kernels: OpenBLAS's sgemm is no faster on float32 prompts
 * (docs/performance.md), and only ours keep the canonical order.
 *
 * Int8 activations (act8; the default for a model with int8 or int4
 * matrices, forward_act8_prepare): every product by an int8 or int4 matrix
 * quantizes its input to int8 in blocks of 32 (lib/kernels/quant.h) and
 * runs the int8-activation kernel on the matrix repacked into tiles at
 * load (lib/kernels/qtile.h: AVX-512 VNNI, AVX2 or the scalar reference,
 * the same bits on any x86-64). Float32 and bf16 matrices (an unquantized
 * LM head) still multiply float inputs; norms, attention, RoPE and the
 * residual stream stay float. It applies to every chunk size, one token's
 * row at a time, so the logits stay bitwise independent of threads, level
 * and chunking. Each product's inputs are quantized once before the pool
 * splits the rows (for several tokens, the threads split them by tokens),
 * into buffers made by forward_init for `batch` rows of the widest input
 * (hidden, heads x head_dim or intermediate); the product's workers only
 * read them. Without act8 (`--f32-activations`, the exact mode) the
 * integer codes multiply float32 inputs (lib/kernels/quant.h's order);
 * `ppl` reports both (int4 and int4+f32).
 *
 * Bf16 activations (b16act, `--bf16-activations`): every product by a bf16
 * matrix rounds its input to bf16 (round to nearest even, once per
 * product, by the calling thread, as act8 does) and runs the bf16-activation
 * kernel (dot_b16 in lib/kernels/kernels.h: vdpbf16ps where the level is
 * AVX-512 and the CPU has AVX512_BF16, else the scalar reference: the same
 * bits on any x86-64) on the model's bf16 matrices, tiled for it at load
 * (model_tile_b16, lib/kernels/btile.h). Half the multiply instructions of
 * the float-input kernel, at the cost of the activations' low 16 bits:
 * `ppl` reports it as its own level (+b16). Float32 and integer matrices are unaffected; the
 * logits stay bitwise independent of threads, level and chunking.
 *
 * Memory: everything (activations for `batch` tokens, logits for `batch`
 * positions, the KV cache for `ctx` positions, the RoPE table, attention
 * scratch, the int8 inputs with act8, the bf16 ones with b16act) is
 * allocated by forward_init; forward_eval allocates nothing.
 */
#ifndef FORWARD_H
#define FORWARD_H

#include <stddef.h>
#include "core/cpu.h"
#include "core/err.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"
#include "model/model.h"
#include "core/pool.h"
#include "kernels/quant.h"

/* Default cap of the KV cache when the caller does not ask for a size:
 * min(max_position_embeddings, FORWARD_CTX_DEFAULT). */
#define FORWARD_CTX_DEFAULT 4096
#define FORWARD_BATCH_DEFAULT 64

/* Called for the last position (pos) of each forward_eval: index 0 is the
 * embedding output, i in 1..n_layers the output of block i - 1, n_layers + 1
 * the output of the final RMSNorm (h has n = hidden_size floats). */
typedef void forward_trace_fn(void *arg, int pos, int index, const float *h, int n);

/* Called during attention with the weights of query head `head` at
 * position pos of block `layer` over keys 0..pos (n = pos + 1 floats, after
 * the softmax, valid during the call). Calls come from the pool's threads,
 * concurrently for distinct (layer, pos, head): the callee writes only
 * where that triple owns. Unset (NULL) it costs one test per (token, head). */
typedef void forward_attn_fn(void *arg, int layer, int pos, int head,
			     const float *w, int n);

struct forward_opts {
	int threads;        /* 0: cpu_cores() */
	int ctx;            /* 0: default above; at most max_position_embeddings */
	int batch;          /* 0: FORWARD_BATCH_DEFAULT */
	enum cpu_level level;  /* kernels to use; the caller caps it by cpu_detect() */
	int act8;           /* int8 activations for the int8 / int4 matrices (above);
			     * the model must have some, tiled (forward_act8_prepare);
			     * 0: a model with untiled ones runs the exact mode */
	int b16act;         /* bf16 activations for the bf16 matrices (above); the
			     * model must have some (forward_has_bf16_weights),
			     * tiled (model_tile_b16); 0: it must have none tiled */
	/* Observers (NULL: none), called with their arg: */
	forward_trace_fn *trace;     /* the residual stream (below) */
	void *trace_arg;
	forward_attn_fn *attn_trace; /* the attention weights (below) */
	void *attn_arg;
};

/* Receives the logits of position pos (n_vocab floats, valid during the
 * call). A non-zero return stops forward_eval, which returns -1 (the
 * callback fills e). */
typedef int forward_emit_fn(void *arg, int pos, const float *logits, struct err *e);

struct forward {
	const struct model *m;
	const struct kernels *k;
	struct pool *pool;
	int threads, ctx, batch;
	int act8, b16act;
	int n_past;           /* positions in the KV cache */
	long positions;       /* positions run through the blocks since init */
	long head_rows;       /* positions whose logits were computed */
	size_t state_bytes;   /* run state allocated by forward_init */
	forward_trace_fn *trace;      /* from forward_opts */
	void *trace_arg;
	forward_attn_fn *attn_trace;
	void *attn_arg;

	/* Run state, [rows x cols] row-major; B = batch, H = hidden,
	 * Q = n_heads * head_dim, KV = n_kv_heads * head_dim, FF = intermediate,
	 * V = vocab. */
	float *x;        /* [B x H] residual stream */
	float *xn;       /* [B x H] normed input of a sublayer */
	float *q;        /* [B x Q] queries */
	float *att;      /* [B x Q] attention output */
	float *tmp;      /* [B x H] sublayer output before the residual add */
	float *g, *u;    /* [B x FF] gate (then silu(gate) * up), up */
	float *logits;   /* [B x V] */
	float *scores;   /* [threads x ATT_MAXQ x ctx] attention weights */
	float *kn, *vn;  /* [B x KV] this chunk's keys (rotated), values */
	float *kc, *vc;  /* [n_layers x n_kv_heads x ctx x head_dim] the cache of
			  * kn, vn: a head's rows one after the other, so that
			  * attention reads them as one stream; kv_bytes each,
			  * on huge pages (anon_alloc): at thousands of
			  * positions decode reads tens of MB of them a token */
	size_t kv_bytes;
	float *rcos, *rsin;  /* [ctx x head_dim / 2] RoPE table */
	struct q8act *xa;    /* act8: [B] one product's inputs, quantized (q8a_alloc) */
	uint16_t *xb;        /* b16act: [B x btile_ldx(widest input)] one product's
			      * inputs */
};

/* Whether any matrix of m's blocks or its LM head stores integers (int8,
 * int4): what act8 needs to change anything. */
int forward_has_int_weights(const struct model *m);

/* Whether any of them is stored as bf16: what b16act needs. */
int forward_has_bf16_weights(const struct model *m);

/* The activations an integer model runs with: int8 (act8) unless f32act
 * asks for the exact float ones. Returns 1 when m has integer matrices
 * and f32act is 0, after tiling them for the int8-activation kernels
 * (model_tile); 0 when m is to run on float activations; -1 with e set
 * (memory). The caller sets forward_opts.act8 to the result. */
int forward_act8_prepare(struct model *m, int f32act, struct err *e);

/* The int8-activation kernel a level runs: "VNNI", "AVX2" or "scalar". */
const char *forward_act8_kernel(enum cpu_level level);

/* Allocates the run state and starts the pool; fails when o->act8 is set
 * and m has no integer matrices. On failure nothing is left to free. The
 * model must outlive f; the caller frees with forward_free. */
int forward_init(struct forward *f, const struct model *m,
		 const struct forward_opts *o, struct err *e);

void forward_free(struct forward *f);

/* Empties the KV cache (n_past = 0). */
void forward_reset(struct forward *f);

/* Keeps the first n positions of the KV cache (0 <= n <= n_past) and drops
 * the rest: the next forward_eval continues at position n, exactly as if
 * only those n ids had been run. */
void forward_keep(struct forward *f, int n);

/* Runs ids[0..n) and hands the logits of the last position (all == 0) or of
 * every position (all != 0) to emit, in order. Returns 0; or -1 with e set
 * when an id is outside the vocabulary or the ids do not fit in the cache
 * (nothing is computed then), or when emit failed. */
int forward_eval(struct forward *f, const int *ids, int n, int all,
		 forward_emit_fn *emit, void *arg, struct err *e);

#endif
