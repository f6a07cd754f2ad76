/* matmul: see matmul.h. */
#include "kernels/matmul.h"
#include "kernels/btile.h"
#include "kernels/kquant.h"
#include "kernels/qtile.h"

#include <stdlib.h>
#include <string.h>

void kern_row(const struct wmat *w, int r, float *out)
{
	if (kq_is(w->type))
		kq_dequant_row(w, r, out);
	else if (wt_is_q5(w->type) || w->type == WT_IQ4)
		qtile_gguf_row(w, r, out);
	else if (wmat_is_int(w))
		quant_dequant_row(w, r, 0, w->cols, out);
	else if (w->tiled)
		btile_row(w, r, out);
	else
		kern_row_float(w, r, out);
}

/* 64 columns from s to d in the interleaved layout: as they are, or a
 * bf16 row's paired (weights.h). */
static void put_chunk(enum wtype type, unsigned char *d, const unsigned char *s, size_t es)
{
	if (type != WT_BF16) {
		memcpy(d, s, es * WMAT_IL_COLS);
		return;
	}
	for (int j = 0; j < WMAT_IL_COLS; j++)
		memcpy(d + 2 * wmat_pair_col(j), s + 2 * j, 2);
}

int kern_interleave(struct wmat *w, void *data, int panels)
{
	size_t es = w->type == WT_F32 ? 4 : w->type == WT_Q8 ? 1 : 2, cols = (size_t)w->cols;
	struct wmat v = *w;
	v.il = panels && wmat_can_panel(w) ? 2 : 1;
	/* in place, four rows at a time (a block stays where it was); panels
	 * move every row, from a copy of the whole matrix */
	size_t blk = 4 * cols * es, all = (size_t)w->rows * cols * es;
	unsigned char *tmp = malloc(v.il == 2 ? all : blk), *d = data;
	if (!tmp)
		return -1;
	if (v.il == 2)
		memcpy(tmp, data, all);
	for (int r = 0; r < w->rows; r += 4) {
		const unsigned char *s = tmp;
		if (v.il == 2)
			s += (size_t)r * cols * es;
		else
			memcpy(tmp, d + (size_t)r * cols * es, blk);
		for (int i = 0; i < 4; i++)
			for (int c = 0; c < w->cols; c += WMAT_IL_COLS)
				put_chunk(w->type, d + es * wmat_at(&v, r + i, c),
					  s + es * ((size_t)i * cols + (size_t)c), es);
	}
	free(tmp);
	w->il = v.il;
	return 0;
}
