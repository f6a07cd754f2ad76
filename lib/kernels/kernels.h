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
 *  att_scores (attention's scores of nq queries over np cached keys):
 *     s_h[p] = dot(q_h, k_p, n) * scale, each (h, p) alone.
 *  att_values (nq weighted sums of np cached values): for each h, for
 *     p = 0, 1, ... in increasing order, y_h[i] = fmaf(s_h[p], v_p[i],
 *     y_h[i]) (an axpy a position, from y_h as given).
 *  dot_b16(w, x, n), both bf16 (the opt-in bf16 activations): the order of
 *     AVX512_BF16's vdpbf16ps in one lane. n is padded with a zero to an
 *     even length; one sum s starts at +0; for each pair p in increasing
 *     order, element 2p + 1, then 2p, each as
 *     s = ftz(fmaf(daz(w[i]), daz(x[i]), s)), where daz and ftz turn a
 *     subnormal input or result into a zero of the same sign (the
 *     instruction's fixed DAZ / FTZ); the result is s, with no fold: the
 *     weights are tiled so that a lane is a row (lib/kernels/btile.h).
 *     Checked against the instruction in tests/c/test_btile.c.
 *
 * The SIMD files are compiled with -ffp-contract=off (Makefile) so the
 * compiler never fuses a multiply and an add that the order above keeps
 * apart.
 *
 * Matrix products go through kern_matmul() (lib/kernels/matmul.h): one
 * lookup in the table below by the storage type of the weight matrix
 * (struct wmat, weights.h) and the kind of activations. The float32, bf16
 * and float16 products are here; int8 and int4 are the quantization
 * kernels' (lib/kernels/quant.h, and qtile.h for int8 activations), which
 * follow the same canonical dot order on the integer codes; the K-quants
 * are kquant.h's.
 */
#ifndef KERNELS_H
#define KERNELS_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "core/cpu.h"
#include "kernels/weights.h"

#define KDOT_LANES 16
#define ATT_MAXQ 8   /* the most query heads an att_scores / att_values call takes */

struct q8act;  /* int8 activations, lib/kernels/quant.h */

/* One matrix product: y[t * ldy + r] = (W x_t)[r] for rows [r0, r1) of w
 * and the T inputs x_t = x + t * ldx. Every output is one canonical dot
 * product (above, lib/kernels/quant.h, qtile.h, kquant.h), so it does not
 * depend on T, on the row range or on the SIMD level. The weight
 * descriptor carries the layout chosen at load (w->il, w->tiled), so no
 * kernel takes a layout flag of its own.
 *   xa  NULL, or the T inputs already quantized to int8 (xa[t] is x_t
 *       through q8a_quantize): then a tiled int8 or int4 w (qtile.h) or a
 *       K-quant w multiplies them (x is not read); other weights ignore xa
 *       and multiply x. A tiled w needs xa.
 *   xb  NULL, or the T inputs rounded to bf16 (f32_to_bf16), btile_ldx(cols)
 *       apart (lib/kernels/btile.h): then a bf16 w, tiled for them,
 *       multiplies them with dot_b16 (x is not read); other weights ignore
 *       xb. */
struct kern_mm {
	float *y;
	int ldy;
	const struct wmat *w;
	int r0, r1;
	const float *x;
	int ldx, T;
	const struct q8act *xa;
	const uint16_t *xb;
};

/* The activations a product multiplies (kern_act, lib/kernels/matmul.h). */
enum kern_act { KA_F32, KA_Q8, KA_B16 };
#define KA_COUNT (KA_B16 + 1)

/* A product for one weight type and one kind of activations, r1 > r0 and
 * T > 0. */
typedef void kern_mm_fn(const struct kern_mm *m);

/* The kernels of one SIMD level, filled once per level (kernels_for), as
 * ggml-cpu's type traits are: the one place a weight type and an
 * activation kind meet a kernel. */
struct kernels {
	enum cpu_level level;
	/* mm[type][act]: NULL where that pair never runs (float weights with
	 * int8 activations, non-bf16 weights with bf16 ones). */
	kern_mm_fn *mm[WT_COUNT][KA_COUNT];
	/* a = x[n] quantized (q8a_quantize's contract, quant.h). */
	void (*q8a_quantize)(const float *x, int n, struct q8act *a);
	/* The most query heads one call below takes at this level (at most
	 * ATT_MAXQ; 4 on AVX2, whose 16 registers hold fewer accumulators). */
	int att_group;
	/* Attention for the nq <= att_group query heads that share one KV head:
	 * q_h = q + h * n, y_h = y + h * n, s_h = s + h * lds; k_p = k + p * ldk,
	 * v_p = v + p * ldv, the rows of the KV cache (read once for all nq). */
	void (*att_scores)(float *s, int lds, const float *q, int nq, const float *k, int ldk,
			   int np, int n, float scale);
	void (*att_values)(float *y, const float *s, int lds, int nq, const float *v, int ldv,
			   int np, int n);
	void (*rmsnorm)(float *out, const float *x, const float *w, int n, float eps);
	void (*softmax)(float *x, int n);
	/* x holds n_heads heads of head_dim floats; cos, sin: head_dim / 2. */
	void (*rope)(float *x, int n_heads, int head_dim, const float *cos,
		     const float *sin);
	void (*silu_mul)(float *g, const float *u, int n);
};

/* The table for a level, at most cpu_detect() (the caller caps it, with
 * cpu_level_env for $QWENPIPE_SIMD). At CPU_AVX512 the int8-activation
 * products use AVX-512 VNNI where the CPU has it (kern_has_vnni; AVX2's
 * kernels otherwise) and the bf16-activation product vdpbf16ps
 * (kern_has_dpbf16; the scalar reference otherwise); every table computes
 * the same bits. Filled on the first call (thread-safe); never freed. */
const struct kernels *kernels_for(enum cpu_level level);

/* Whether this CPU has AVX512_BF16 (vdpbf16ps), and AVX-512 VNNI
 * (vpdpbusd), with the AVX-512 of cpu_detect(). */
int kern_has_dpbf16(void);
int kern_has_vnni(void);

/* Scalar pieces shared by the SIMD files for their tails and reductions. */
float kern_sum16(const float s[KDOT_LANES]);

/* Each level's float-activation products of the float types (kernels.c,
 * kernels_avx2.c, kernels_avx512.c): mm[type][KA_F32] of its table; the
 * K-quants' exact mode runs the float32 one on the rows it dequantizes
 * (kquant.h). */
kern_mm_fn kern_mm_f32_scalar, kern_mm_f32_avx2, kern_mm_f32_avx512;
kern_mm_fn kern_mm_bf16_scalar, kern_mm_bf16_avx2, kern_mm_bf16_avx512;
kern_mm_fn kern_mm_f16_scalar, kern_mm_f16_avx2, kern_mm_f16_avx512;

/* The bf16-activation product (dot_b16, on a matrix tiled by
 * lib/kernels/btile.h) in scalar code (btile.c): every table's, except
 * where vdpbf16ps runs. */
kern_mm_fn kern_mm_b16_ref;

/* The same with vdpbf16ps (kernels_avx512.c), where kern_has_dpbf16(). */
kern_mm_fn kern_mm_b16_dpbf16;

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
