/* benchrun: the measurements behind `bench` (tools/bench), one model at a
 * time, in-process through the library: no logits piped, so the figures
 * are the engine's, not the pipe's (docs/architecture.md).
 *
 * A contender is a model file opened with some model_opts (mapped, copied,
 * widened to f32). One repetition on a forward state runs what a user
 * waits for, timed in parts:
 *   prefill  forward_eval of `prompt` ids (one batched call) with the LM
 *            head of the last position: prompt / seconds is tokens/s;
 *   ttft     the prefill plus drawing the first token with the model's
 *            generation defaults (the sampler's time included);
 *   decode   `tokens` single-token forward_eval calls, each fed the token
 *            just drawn; seconds per token, the sampler's time excluded;
 *   sampler  the mean time of sampler_next over the tokens drawn.
 * The prompt ids are fixed (spread over the vocabulary) and the sampler's
 * seed is fixed, so every repetition does the same work.
 *
 * Memory: bench_rss_reset / bench_rss_peak use /proc/self/clear_refs ("5"
 * resets the peak) and VmHWM, so the resident memory a model adds can be
 * read even when several models live in one process.
 *
 * The OpenBLAS reference (bench_sgemm_prefill) multiplies float32 matrices
 * of the model's own shapes (every layer's q, k, v, o, gate, up, down by
 * `prompt` columns, then the LM head by the last column) with cblas_sgemm
 * on OpenBLAS's own threads: the prefill a float32 GEMM library would reach
 * on the same work, attention excluded. Its memory (4 bytes per weight) is
 * allocated, filled and freed inside the call.
 *
 * The machine's description (CPU model, the SIMD flags that matter here,
 * load, the commit) goes with every recorded figure: bench_machine.
 */
#ifndef BENCHRUN_H
#define BENCHRUN_H

#include <stddef.h>
#include "format/config.h"
#include "core/err.h"
#include "model/forward.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "core/timing.h"

struct bench_contender {
	const char *path;        /* as given */
	struct model_opts mo;
	int f32act;              /* integer matrices with float32 activations
				  * (forward --f32-activations) */
	int act8;                /* bench_open: whether it runs with int8
				  * activations (forward_act8_prepare) */
	int b16act;              /* run with bf16 activations (forward_opts) */
	struct model m;
	const char *precision;   /* "f32", "bf16", "f16", "int8", "int4" (of the matrices) */
	const char *weights;     /* "mapped" or "copied" (or "widened" for f32) */
	size_t bytes_per_token;  /* weight bytes one decode step reads */
	double open_s;           /* model_load, wall seconds */
	double rss_mib;          /* resident memory the model added, at its peak
				  * after the warm-up (bench_rss_*) */
};

/* Opens c->path with c->mo, timing it and filling every field. Returns 0 or
 * -1 with e set. The caller frees with model_free(&c->m). */
int bench_open(struct bench_contender *c, struct err *e);

struct bench_rep {
	double prefill_s, ttft_s;
	double decode_s;    /* per token */
	double sampler_s;   /* per token */
};

/* One repetition (see above) on f, which it resets first; s must have the
 * model's vocabulary. prompt + tokens must fit in f's context. */
int bench_run(struct forward *f, struct sampler *s, int prompt, int tokens,
	      struct bench_rep *r, struct err *e);

/* Resets the process's peak resident memory; returns the current resident
 * memory in MiB (0 when /proc is not there). */
double bench_rss_reset(void);
/* The peak resident memory since the last reset, in MiB. */
double bench_rss_peak(void);

/* Seconds for the float32 prefill of `prompt` tokens of a model shaped c
 * through OpenBLAS with `threads` threads, each of reps runs timed (after
 * one warm-up); fills t[0..reps). OpenBLAS is set back to one thread after
 * (the forward pass's setting, lib/model/forward.h). Returns 0, or -1 with e set
 * (memory). */
int bench_sgemm_prefill(const struct model_config *c, int prompt, int threads, int reps,
			double *t, struct err *e);

/* The kernel's own ceiling: weight bytes per second (1e9) that one thread's
 * single-token product (kern_matmul, T = 1) consumes from a rows x cols
 * matrix of this type small enough to stay in cache, best of reps (after
 * a warm-up). Decode cannot read weights from memory faster than its
 * kernel consumes them, so threads x this figure over the measured
 * bandwidth bounds the fraction of the limit decode can reach. The matrix
 * has like's type: random, quantized like quantize does, with group_size
 * as like has it (int4: 32; int8: 0, a scale per row, or GGUF's 32);
 * float16 as GGUF's F16 (type WT_F16); the K-quants, Q5_0 and Q5_1, which
 * only a file holds, are like's first rows (like has cols columns); rows
 * interleaved where like's are (weights.h). act8 (int8 /
 * int4 only): the int8-activation kernel, the input quantized once before
 * the timed calls; b16act (bf16 only): the bf16-activation kernel, the
 * input rounded to bf16 the same way. Returns 0, or -1 with e set
 * (memory). */
int bench_kernel_gbs(const struct kernels *k, const struct wmat *like, int act8, int b16act,
		     int rows, int cols, int reps, struct spread *gbs, struct err *e);

struct bench_machine {
	char cpu[128];       /* /proc/cpuinfo "model name" */
	char flags[256];     /* the SIMD flags present, space-separated */
	char commit[48];     /* git HEAD (12 hex digits), "+dirty" when the tree
			      * has changes; "unknown" outside a checkout */
	char date[32];       /* UTC, ISO 8601 */
	int cores;           /* cpu_cores() */
	char kernels[16];    /* the level the kernels run at (cpu_level_env) */
};

/* Fills m (every field has a value: "unknown" when not found). */
void bench_machine(struct bench_machine *m);

/* The 1-minute load average (-1 when unknown): recorded with each figure,
 * since a busy machine slows everything. */
double bench_loadavg(void);

#endif
