/* btile: see btile.h. */
#include "kernels/btile.h"
#include "core/bf16.h"

#include <float.h>
#include <math.h>
#include <string.h>

void btile_pack_rows(const struct wmat *src, void *dst, int r0, int r1)
{
	const uint16_t *s = src->data;
	uint16_t *d = dst;
	int cols = src->cols, rt = (r1 + BTILE_ROWS - 1) / BTILE_ROWS * BTILE_ROWS;
	size_t tile = btile_tile_bytes(cols);
	memset((char *)dst + (size_t)(r0 / BTILE_ROWS) * tile, 0,
	       (size_t)(rt - r0) / BTILE_ROWS * tile);
	for (int r = r0; r < r1; r++)
		for (int c = 0; c < cols; c++)
			d[btile_at(r, c, cols)] = s[wmat_at(src, r, c)];
}

void btile_view(const struct wmat *src, void *dst, struct wmat *out)
{
	*out = (struct wmat){ .type = WT_BF16, .rows = src->rows, .cols = src->cols,
			      .data = dst, .tiled = 1 };
}

void btile_row(const struct wmat *w, int r, float *out)
{
	const uint16_t *d = w->data;
	for (int c = 0; c < w->cols; c++)
		out[c] = bf16_to_f32(d[btile_at(r, c, w->cols)]);
}

/* A subnormal as a zero of its sign: the DAZ and FTZ of vdpbf16ps. */
static float flush(float v)
{
	return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;
}

/* s plus one bf16 product, in dot_b16's step (kernels.h). */
static float step(uint16_t w, uint16_t x, float s)
{
	return flush(fmaf(flush(bf16_to_f32(w)), flush(bf16_to_f32(x)), s));
}

void kern_mm_b16_ref(const struct kern_mm *m)
{
	const struct wmat *w = m->w;
	const uint16_t *d = w->data;
	int np = btile_pairs(w->cols), ldx = btile_ldx(w->cols);
	for (int r = m->r0; r < m->r1; r++)
		for (int t = 0; t < m->T; t++) {
			const uint16_t *x = m->xb + (size_t)t * (size_t)ldx;
			float s = 0.0f;
			for (int p = 0; p < np; p++) {
				const uint16_t *pair = d + btile_at(r, 2 * p, w->cols);
				s = step(pair[1], x[2 * p + 1], s);
				s = step(pair[0], x[2 * p], s);
			}
			m->y[(size_t)t * m->ldy + r] = s;
		}
}
