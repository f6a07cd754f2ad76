/* matmul: see matmul.h. */
#include "kernels/matmul.h"

#include <stdlib.h>

void kern_matmul(const struct kernels *k, const struct kern_mm *m)
{
	if (m->r1 <= m->r0 || m->T <= 0)
		return;
	const struct wmat *w = m->w;
	switch (w->type) {
	case WT_F32:
		k->matmul_f32(m->y, m->ldy, w->data, w->cols, m->r0, m->r1, m->x, m->ldx,
			      m->T);
		return;
	case WT_BF16:
		if (m->xb) {
			k->matmul_b16(m->y, m->ldy, w->data, w->cols, m->r0, m->r1, m->xb,
				      w->cols, m->T);
			return;
		}
		k->matmul_bf16(m->y, m->ldy, w->data, w->cols, m->r0, m->r1, m->x, m->ldx,
			       m->T);
		return;
	case WT_F16:
		k->matmul_f16(m->y, m->ldy, w->data, w->cols, m->r0, m->r1, m->x, m->ldx,
			      m->T);
		return;
	case WT_Q8:
	case WT_Q4:
		if (m->xa)
			quant_matmul_q8a(k->level, w, m->y, m->ldy, m->r0, m->r1, m->xa, m->T);
		else
			quant_matmul(k->level, w, m->y, m->ldy, m->r0, m->r1, m->x, m->ldx,
				     m->T);
		return;
	}
	abort();
}

void kern_row(const struct wmat *w, int r, float *out)
{
	if (wmat_is_int(w))
		quant_dequant_row(w, r, 0, w->cols, out);
	else
		kern_row_float(w, r, out);
}
