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
	else if (wt_is_q5(w->type))
		qtile_q5_row(w, r, out);
	else if (wmat_is_int(w))
		quant_dequant_row(w, r, 0, w->cols, out);
	else if (w->tiled)
		btile_row(w, r, out);
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
			for (size_t c = 0; c < cols; c += WMAT_IL_COLS) {
				unsigned char *d = p + es * (wmat_row_at(i, (int)cols, 1) +
							     wmat_il_col((int)c));
				const unsigned char *s = tmp + es * (i * cols + c);
				if (w->type != WT_BF16) {
					memcpy(d, s, es * WMAT_IL_COLS);
					continue;
				}
				for (int j = 0; j < WMAT_IL_COLS; j++)  /* paired */
					memcpy(d + 2 * wmat_pair_col(j), s + 2 * j, 2);
			}
	}
	free(tmp);
	w->il = 1;
	return 0;
}
