/* matmul: see matmul.h. */
#include "kernels/matmul.h"
#include "kernels/kquant.h"
#include "kernels/qtile.h"

#include <stdlib.h>
#include <string.h>

void kern_matmul(const struct kernels *k, const struct kern_mm *m)
{
	if (m->r1 <= m->r0 || m->T <= 0)
		return;
	const struct wmat *w = m->w;
	switch (w->type) {
	case WT_F32:
		k->matmul_f32(m->y, m->ldy, w->data, w->cols, w->il, m->r0, m->r1, m->x, m->ldx,
			      m->T);
		return;
	case WT_BF16:
		if (m->xb) {
			k->matmul_b16(m->y, m->ldy, w->data, w->cols, w->il, m->r0, m->r1, m->xb,
				      w->cols, m->T);
			return;
		}
		k->matmul_bf16(m->y, m->ldy, w->data, w->cols, w->il, m->r0, m->r1, m->x, m->ldx,
			       m->T);
		return;
	case WT_F16:
		k->matmul_f16(m->y, m->ldy, w->data, w->cols, w->il, m->r0, m->r1, m->x, m->ldx,
			      m->T);
		return;
	case WT_Q8:
	case WT_Q4:
		if (m->xa)
			qtile_matmul(k->level, w, m->y, m->ldy, m->r0, m->r1, m->xa, m->T);
		else
			quant_matmul(k->level, w, m->y, m->ldy, m->r0, m->r1, m->x, m->ldx,
				     m->T);
		return;
	case WT_Q4K:
	case WT_Q5K:
	case WT_Q6K:
		if (m->xa)
			kq_matmul_q8a(k->level, w, m->y, m->ldy, m->r0, m->r1, m->xa, m->T);
		else
			kq_matmul(k, w, m->y, m->ldy, m->r0, m->r1, m->x, m->ldx, m->T);
		return;
	}
	abort();
}

void kern_row(const struct wmat *w, int r, float *out)
{
	if (kq_is(w->type))
		kq_dequant_row(w, r, out);
	else if (wmat_is_int(w))
		quant_dequant_row(w, r, 0, w->cols, out);
	else
		kern_row_float(w, r, out);
}

int kern_interleave(struct wmat *w, void *data)
{
	size_t es = w->type == WT_F32 ? 4 : w->type == WT_Q8 ? 1 : 2, cols = (size_t)w->cols,
	       blk = 4 * cols * es;
	unsigned char *tmp = malloc(blk), *p = data;
	if (!tmp)
		return -1;
	for (int r = 0; r < w->rows; r += 4, p += blk) {
		memcpy(tmp, p, blk);
		for (int i = 0; i < 4; i++)
			for (size_t c = 0; c < cols; c += WMAT_IL_COLS)
				memcpy(p + es * (wmat_row_at(i, (int)cols, 1) + wmat_il_col((int)c)),
				       tmp + es * (i * cols + c), es * WMAT_IL_COLS);
	}
	free(tmp);
	w->il = 1;
	return 0;
}
