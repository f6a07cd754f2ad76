/* matmul: the one entry point of a matrix product, or a row lookup, for a
 * weight matrix of any storage type (struct wmat, weights.h).
 *
 * A product is one lookup in the kernel table of a level (struct kernels,
 * lib/kernels/kernels.h): by the weight type and the kind of activations
 * it multiplies, and the entry runs it. The entries are the float kernels
 * (kernels.h), the integer ones (quant.h, qtile.h) and the K-quants'
 * (kquant.h); none calls back up here.
 */
#ifndef MATMUL_H
#define MATMUL_H

#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/weights.h"

/* The activations m's weights multiply (struct kern_mm, kernels.h): int8
 * ones for a tiled int8 or int4 matrix and for the types only a GGUF file
 * makes (wt_from_gguf) when m has them, bf16 ones for a bf16 matrix when
 * m has them, else float. */
static inline enum kern_act kern_act(const struct kern_mm *m)
{
	const struct wmat *w = m->w;
	if (m->xa && (w->tiled || wt_from_gguf(w->type)))
		return KA_Q8;
	if (m->xb && w->type == WT_BF16)
		return KA_B16;
	return KA_F32;
}

/* One product (struct kern_mm, kernels.h) with the kernels of k; nothing
 * when the row range or T is empty. */
static inline void kern_matmul(const struct kernels *k, const struct kern_mm *m)
{
	if (m->r1 > m->r0 && m->T > 0)
		k->mm[m->w->type][kern_act(m)](m);
}

/* out[0..cols) = row r of w, widened (float32, bf16) or dequantized (int8,
 * int4, K-quants, Q5_0, Q5_1) to float. */
void kern_row(const struct wmat *w, int r, float *out);

/* Rearranges w (wmat_can_interleave; an int8 matrix's codes) in place into
 * interleaved rows, a bf16 one's columns paired, in column panels when
 * panels is set and wmat_can_panel(w) (weights.h), and sets w->il; data
 * is w->data, writable. Panels are the AVX-512 kernels' layout: the
 * others read them through the scalar reference. Returns 0, or -1 out of
 * memory (w unchanged). */
int kern_interleave(struct wmat *w, void *data, int panels);

#endif
