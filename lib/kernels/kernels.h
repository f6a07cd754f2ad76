/* kernels: the numeric inner loops of the forward pass, one scalar
 * reference and SIMD versions (AVX2, AVX-512) behind one table.
 *
 * Every kernel has a *canonical evaluation order*, written down here and
 * followed exactly by each implementation, so the SIMD kernels give results
 * bitwise identical to the scalar reference (tests/c/test_kernels.c checks
 * this on odd sizes), and a model's output does not depend on the ISA
 * chosen, the thread count, or how a prompt was cut into chunks:
 *
 *  dot(a, b, n): 16 partial sums s[0..15] start at +0; element i goes into
 *     s[i % 16] as s = fmaf(a[i], b[i], s), in increasing i; then the sums
 *     are folded in halves: s[j] += s[j + w] for w = 8, 4, 2, 1 (j < w);
 *     the result is s[0]. Every matmul output and every attention score is
 *     such a dot (bf16 weights widened exactly first).
 *  sum(x, n): the same with s += x[i] (no multiply).
 *  exp(x): kexp() below, a Cephes-style exp in fmaf steps; the SIMD
 *     kernels evaluate the same steps lane by lane.
 *  rmsnorm: r = 1 / sqrtf(dot(x, x, n) / n + eps); out[i] = w[i] * (x[i] * r)
 *     (transformers' order).
 *  softmax: m = max x; e[i] = kexp(x[i] - m); x[i] = e[i] / sum(e, n).
 *  rope (half-split): for each head and i < d/2, with c = cos[i],
 *     s = sin[i]: a = x[i], b = x[i + d/2]; x[i] = a*c - b*s;
 *     x[i + d/2] = b*c + a*s (products rounded, then the add: no fma).
 *  silu_mul: g[i] = g[i] / (1 + kexp(-g[i])) * u[i].
 *  axpy: y[i] = fmaf(a, x[i], y[i]).
 *  dot_b16(w, x, n), both bf16 (the opt-in bf16 activations): the order of
 *     AVX512_BF16's vdpbf16ps. n is padded with zeros to a multiple of 32;
 *     16 partial sums start at +0; for each 32 elements c .. c + 31, lane
 *     j takes the pair c + 2j + 1, then c + 2j, each as
 *     s[j] = ftz(fmaf(daz(w[i]), daz(x[i]), s[j])), where daz and ftz turn
 *     a subnormal input or result into a zero of the same sign (the
 *     instruction's fixed DAZ / FTZ); then the fold of dot. Checked against
 *     the instruction in tests/c/test_kernels.c.
 *
 * The SIMD files are compiled with -ffp-contract=off (Makefile) so the
 * compiler never fuses a multiply and an add that the order above keeps
 * apart.
 *
 * Matrix products go through kern_matmul() (lib/kernels/matmul.h), the one
 * place that dispatches on the storage type of a weight matrix (struct
 * wmat, weights.h): float32 and bf16 come here, int8 and int4 go to the
 * quantization kernels (lib/kernels/quant.h), which follow the same
 * canonical dot order on the integer codes.
 */
#ifndef KERNELS_H
#define KERNELS_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "core/cpu.h"
#include "kernels/weights.h"

#define KDOT_LANES 16

/* y[t * ldy + r] = dot(W row r, x + t * ldx, cols) for r in [r0, r1) and
 * t in [0, T). W is [rows x cols], row-major, or with il its rows
 * interleaved in blocks of four (lib/kernels/weights.h): the same sums in
 * the same order either way. */
typedef void kmatmul_f32_fn(float *y, int ldy, const float *w, int cols, int il,
			    int r0, int r1, const float *x, int ldx, int T);
/* The same with 16-bit weights widened exactly: bf16 (matmul_bf16) or IEEE
 * binary16 (matmul_f16, GGUF's F16): each output is the canonical dot of
 * the widened row, so bitwise what matmul_f32 gives on the widened matrix. */
typedef void kmatmul_bf16_fn(float *y, int ldy, const uint16_t *w, int cols, int il,
			     int r0, int r1, const float *x, int ldx, int T);
/* The same with bf16 inputs x (dot_b16 above). */
typedef void kmatmul_b16_fn(float *y, int ldy, const uint16_t *w, int cols, int il,
			    int r0, int r1, const uint16_t *x, int ldx, int T);

struct kernels {
	enum cpu_level level;
	kmatmul_f32_fn *matmul_f32;
	kmatmul_bf16_fn *matmul_bf16;
	kmatmul_bf16_fn *matmul_f16;
	kmatmul_b16_fn *matmul_b16;  /* vdpbf16ps where the CPU has it */
	float (*dot)(const float *a, const float *b, int n);
	void (*rmsnorm)(float *out, const float *x, const float *w, int n, float eps);
	void (*softmax)(float *x, int n);
	/* x holds n_heads heads of head_dim floats; cos, sin: head_dim / 2. */
	void (*rope)(float *x, int n_heads, int head_dim, const float *cos,
		     const float *sin);
	void (*silu_mul)(float *g, const float *u, int n);
	void (*axpy)(float *y, float a, const float *x, int n);
};

/* The table for a level (not above cpu_detect(); the caller checks). At
 * CPU_AVX512 on a CPU with AVX512_BF16 (kern_has_dpbf16), matmul_b16 uses
 * vdpbf16ps; every other table computes the same bits without it. */
const struct kernels *kernels_for(enum cpu_level level);

int kern_has_dpbf16(void);

/* Scalar pieces shared by the SIMD files for their tails and reductions. */
float kern_sum16(const float s[KDOT_LANES]);

/* matmul_b16 in scalar code: every table's, except where vdpbf16ps runs. */
kmatmul_b16_fn kern_matmul_b16_ref;

/* out[0..cols) = row r of w, a WT_F32, WT_BF16 or WT_F16 matrix, as float
 * (16-bit weights widened exactly). kern_row (matmul.h) takes any storage type. */
void kern_row_float(const struct wmat *w, int r, float *out);

/* The canonical exp (see above), scalar. Inputs are clamped to
 * [-87, 88]: the result is never 0, inf or subnormal. */
#define KEXP_LO (-87.0f)
#define KEXP_HI 88.0f
#define KEXP_LOG2E 1.44269504088896341f
#define KEXP_C1 0.693359375f
#define KEXP_C2 (-2.12194440e-4f)
#define KEXP_P0 1.9875691500e-4f
#define KEXP_P1 1.3981999507e-3f
#define KEXP_P2 8.3334519073e-3f
#define KEXP_P3 4.1665795894e-2f
#define KEXP_P4 1.6666665459e-1f
#define KEXP_P5 5.0000001201e-1f

static inline float kexp(float x)
{
	x = x < KEXP_LO ? KEXP_LO : x > KEXP_HI ? KEXP_HI : x;
	float n = nearbyintf(x * KEXP_LOG2E);
	float r = fmaf(n, -KEXP_C1, x);
	r = fmaf(n, -KEXP_C2, r);
	float p = KEXP_P0;
	p = fmaf(p, r, KEXP_P1);
	p = fmaf(p, r, KEXP_P2);
	p = fmaf(p, r, KEXP_P3);
	p = fmaf(p, r, KEXP_P4);
	p = fmaf(p, r, KEXP_P5);
	float y = fmaf(p, r * r, r) + 1.0f;
	uint32_t bits = (uint32_t)((int)n + 127) << 23;
	float scale;
	memcpy(&scale, &bits, 4);
	return y * scale;
}

#endif
