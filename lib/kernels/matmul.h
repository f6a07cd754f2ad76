/* matmul: the one place that dispatches a matrix product, or a row lookup,
 * on the storage type of a weight matrix (struct wmat, weights.h).
 *
 * It sits above both kernel families: float32 and bf16 matrices go to the
 * float kernels (kernels.h), int8 and int4 ones to the quantization kernels
 * (quant.h), which use the float kernels' pieces but never call back up
 * here.
 */
#ifndef MATMUL_H
#define MATMUL_H

#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/weights.h"

/* One product: y[t * ldy + r] = (W x_t)[r] for rows [r0, r1) of w and the
 * T inputs x_t = x + t * ldx. Every output is one canonical dot product
 * (kernels.h, quant.h), so it does not depend on T, on the row range or on
 * the SIMD level. xa: NULL, or the T inputs already quantized to int8 (xa[t]
 * is x_t through q8a_quantize): then an int8 or int4 w, tiled
 * (lib/kernels/qtile.h), multiplies them with the int8-activation kernel
 * (qtile_matmul; x is not read), and float32 or bf16 weights ignore xa and
 * multiply x. An untiled int8 or int4 w multiplies x (quant_matmul, the
 * exact mode). xb: NULL, or the T inputs
 * rounded to bf16 (f32_to_bf16), cols apart: then a bf16 w multiplies them
 * with matmul_b16 (dot_b16 in kernels.h; x is not read), and other weights
 * ignore xb. */
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

void kern_matmul(const struct kernels *k, const struct kern_mm *m);

/* out[0..cols) = row r of w, widened (float32, bf16) or dequantized (int8,
 * int4, K-quants) to float. */
void kern_row(const struct wmat *w, int r, float *out);

/* Rearranges w (wmat_can_interleave; an int8 matrix's codes) in place into
 * interleaved rows
 * (weights.h) and sets w->il; data is w->data, writable. Returns 0, or -1
 * out of memory (w unchanged). */
int kern_interleave(struct wmat *w, void *data);

#endif
