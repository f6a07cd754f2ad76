/* quant: see quant.h. The schemes and the scalar reference kernels. */
#include "kernels/quant.h"
#include "kernels/btile.h"
#include "core/bf16.h"
#include "kernels/quant_isa.h"
#include "kernels/kquant.h"
#include "kernels/kernels.h"
#include "kernels/qtile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- schemes ---- */

static int8_t round_clamp(float v, int lo, int hi)
{
	float r = roundf(v);  /* half away from zero */
	if (r < (float)lo)
		return (int8_t)lo;
	if (r > (float)hi)
		return (int8_t)hi;
	return (int8_t)r;
}

/* Symmetric round-to-nearest: scale = max|w| / qmax, q = round(w / scale)
 * clamped to [-qmax, qmax] (all zero when w is); returns the scale. */
static float symmetric(const float *w, int n, int qmax, int8_t *q)
{
	float amax = 0;
	for (int i = 0; i < n; i++)
		amax = fmaxf(amax, fabsf(w[i]));
	float s = amax / (float)qmax;
	for (int i = 0; i < n; i++)
		q[i] = s == 0 ? 0 : round_clamp(w[i] / s, -qmax, qmax);
	return s;
}

void q8_quantize_row(const float *w, int n, int8_t *q, float *scale)
{
	*scale = symmetric(w, n, 127, q);
}

static void q4_pack(const int8_t *codes, int n, uint8_t *q)
{
	for (int b = 0; b < n; b += Q4_BLOCK)
		for (int j = 0; j < Q4_BLOCK / 2; j++)
			q[b / 2 + j] = (uint8_t)((codes[b + j] + 8) |
						 ((codes[b + Q4_BLOCK / 2 + j] + 8) << 4));
}

/* One int4 group: scale = -m / 8 rounded to the nearest IEEE half, with m
 * the weight of largest magnitude (the first on ties, with its sign), so
 * m's code is -8 and the whole range [-8, 7] is used; codes round half
 * away from zero. A half scale takes 16 bits in the int8-activation tiles
 * (qtile.h's QT_F16): 4.5 bits a weight, as GGUF's Q4_0. A scale beyond
 * the halves' range (|m| over 8 x 65504) stays float32, and its matrix
 * keeps float32 scales in the tiles. Returns the scale. */
static float q4_group(const float *w, int n, int8_t *codes)
{
	float m = 0;
	for (int i = 0; i < n; i++)
		if (fabsf(w[i]) > fabsf(m))
			m = w[i];
	float s = -m / 8.0f, h = f16_to_f32(f32_to_f16(s));
	if (isfinite(h))
		s = h;
	for (int i = 0; i < n; i++)
		codes[i] = s == 0 ? 0 : round_clamp(w[i] / s, -8, 7);
	return s;
}

void q4_quantize_row(const float *w, int n, int group, uint8_t *q, float *scales)
{
	int8_t codes[group];
	for (int g = 0; g < n / group; g++) {
		scales[g] = q4_group(w + (size_t)g * group, group, codes);
		q4_pack(codes, group, q + (size_t)g * group / 2);
	}
}

void q4_quantize_row_rtn(const float *w, int n, int group, uint8_t *q, float *scales)
{
	int8_t codes[group];
	for (int g = 0; g < n / group; g++) {
		scales[g] = symmetric(w + (size_t)g * group, group, 7, codes);
		q4_pack(codes, group, q + (size_t)g * group / 2);
	}
}

int q4_check_shape(int cols, int group, struct err *e)
{
	if (group <= 0 || group % Q4_BLOCK != 0)
		return err_set(e, "group size %d is not a multiple of %d", group, Q4_BLOCK);
	if (cols % group != 0)
		return err_set(e, "group size %d does not divide %d columns", group, cols);
	return 0;
}

size_t q8_data_bytes(int rows, int cols)
{
	return (size_t)rows * (size_t)cols;
}

size_t q4_data_bytes(int rows, int cols)
{
	return (size_t)rows * (size_t)cols / 2;
}

size_t q4_nscales(int rows, int cols, int group)
{
	return (size_t)rows * (size_t)(cols / group);
}

size_t wmat_data_bytes(const struct wmat *w)
{
	if (!w->tiled && w->type == WT_Q8)
		return q8_data_bytes(w->rows, w->cols);
	if (!w->tiled && w->type == WT_Q4)
		return q4_data_bytes(w->rows, w->cols);
	return wmat_bytes(w);
}

size_t wmat_bytes(const struct wmat *w)
{
	size_t n = (size_t)w->rows * (size_t)w->cols;
	if (w->tiled && w->type == WT_BF16)
		return btile_bytes(w->rows, w->cols);
	if (w->tiled)
		return qtile_bytes(w->type, w->rows, w->cols, (enum qtile_scales)(w->tiled - 1));
	switch (w->type) {
	case WT_F32: return n * 4;
	case WT_BF16:
	case WT_F16: return n * 2;
	case WT_Q8:
		return n + sizeof(float) * (w->group_size ? q4_nscales(w->rows, w->cols, w->group_size)
							  : (size_t)w->rows);
	case WT_Q4: return n / 2 + sizeof(float) * q4_nscales(w->rows, w->cols, w->group_size);
	case WT_Q4K:
	case WT_Q5K:
	case WT_Q6K: return kq_bytes(w->type, w->rows, w->cols);
	case WT_Q50:
	case WT_Q51:
	case WT_IQ4: break;  /* always tiled: above */
	}
	return 0;
}

void quant_dequant_row(const struct wmat *w, int r, int c0, int c1, float *out)
{
	if (w->type == WT_Q8 || w->tiled) {
		for (int c = c0; c < c1; c++)
			out[c - c0] = quant_scale(w, r, c) * (float)quant_code(w, r, c);
		return;
	}
	const float *s = w->scales + (size_t)r * (w->cols / w->group_size);
	const uint8_t *q = (const uint8_t *)w->data + (size_t)r * w->cols / 2;
	for (int b = c0; b < c1; b += Q4_BLOCK) {
		float sc = s[b / w->group_size];
		for (int j = 0; j < Q4_BLOCK / 2; j++) {
			uint8_t byte = q[b / 2 + j];
			out[b - c0 + j] = sc * (float)((byte & 15) - 8);
			out[b - c0 + Q4_BLOCK / 2 + j] = sc * (float)((byte >> 4) - 8);
		}
	}
}

int quant_row_finite(const char *name, long r, const float *row, int cols, struct err *e)
{
	for (int c = 0; c < cols; c++)
		if (!isfinite(row[c]))
			return err_set(e, "tensor '%s': row %ld, column %d is %g: quantizing would hide "
				       "it (st-inspect --check finds such values)", name, r, c, row[c]);
	return 0;
}

void quant_matrix(const struct wmat *src, enum wtype to, int group, int rtn,
		  void *data, float *scales)
{
	int n = src->cols;
	float row[n];
	for (int r = 0; r < src->rows; r++) {
		kern_row_float(src, r, row);
		if (to == WT_Q8 && group)
			for (int g = 0; g < n / group; g++)
				q8_quantize_row(row + (size_t)g * group, group,
						(int8_t *)data + (size_t)r * n + (size_t)g * group,
						scales + (size_t)r * (n / group) + g);
		else if (to == WT_Q8)
			q8_quantize_row(row, n, (int8_t *)data + (size_t)r * n, &scales[r]);
		else
			(rtn ? q4_quantize_row_rtn : q4_quantize_row)(
				row, n, group, (uint8_t *)data + (size_t)r * n / 2,
				scales + (size_t)r * (n / group));
	}
}

double quant_rel_error(const struct wmat *src, const struct wmat *q)
{
	int n = src->cols;
	float a[n], b[n];
	double num = 0, den = 0;
	for (int r = 0; r < src->rows; r++) {
		kern_row_float(src, r, a);
		quant_dequant_row(q, r, 0, n, b);
		for (int c = 0; c < n; c++) {
			double d = (double)a[c] - b[c];
			num += d * d;
			den += (double)a[c] * a[c];
		}
	}
	return den > 0 ? sqrt(num / den) : 0;
}

/* ---- scalar reference kernels ---- */

/* Rows [r0, r1) of an int8 matrix with a scale per row. */
static void q8_rows_scalar(const struct kern_mm *m)
{
	const struct wmat *w = m->w;
	for (int r = m->r0; r < m->r1; r++) {
		for (int t = 0; t < m->T; t++) {
			const float *xt = m->x + (size_t)t * m->ldx;
			float s[KDOT_LANES] = { 0 };
			for (int c = 0; c < w->cols; c++)
				s[c % 16] = fmaf((float)quant_code(w, r, c), xt[c], s[c % 16]);
			m->y[(size_t)t * m->ldy + r] = kern_sum16(s) * w->scales[r];
		}
	}
}

/* Group-scaled codes, int4 and int8 (WT_Q8 with a group_size): one scalar
 * reference for both. */
static void grp_rows_scalar(const struct kern_mm *m)
{
	const struct wmat *w = m->w;
	int G = w->group_size, ng = w->cols / G;
	for (int r = m->r0; r < m->r1; r++) {
		const float *s = w->scales + (size_t)r * ng;
		for (int t = 0; t < m->T; t++) {
			const float *xt = m->x + (size_t)t * m->ldx;
			float acc[KDOT_LANES] = { 0 };
			for (int g = 0; g < ng; g++) {
				float gs[KDOT_LANES] = { 0 };
				for (int c = g * G; c < (g + 1) * G; c++)
					gs[c % 16] = fmaf((float)quant_code(w, r, c), xt[c], gs[c % 16]);
				for (int j = 0; j < 16; j++)
					acc[j] = fmaf(gs[j], s[g], acc[j]);
			}
			m->y[(size_t)t * m->ldy + r] = kern_sum16(acc);
		}
	}
}

void q8_mm_scalar(const struct kern_mm *m)
{
	if (wmat_grouped(m->w))
		grp_rows_scalar(m);
	else
		q8_rows_scalar(m);
}

void q4_mm_scalar(const struct kern_mm *m)
{
	grp_rows_scalar(m);
}

int q8a_padded(int n)
{
	return (n + Q8A_BLOCK - 1) / Q8A_BLOCK * Q8A_BLOCK;
}

struct q8act *q8a_alloc(int n, int T)
{
	size_t np = (size_t)q8a_padded(n), nb = np / Q8A_BLOCK;
	size_t per = nb * (sizeof(float) + 3 * sizeof(int32_t)) + np;
	struct q8act *a = malloc(sizeof *a * (size_t)T + per * (size_t)T);
	if (!a)
		return NULL;
	unsigned char *p = (unsigned char *)(a + T);
	for (int t = 0; t < T; t++, p += per)
		a[t] = (struct q8act){ .n = n, .scales = (float *)p,
				       .sums = (int32_t *)(p + nb * sizeof(float)),
				       .hsums = (int32_t *)(p + nb * (sizeof(float) + sizeof(int32_t))),
				       .q = (int8_t *)(p + nb * (sizeof(float) + 3 * sizeof(int32_t))) };
	return a;
}

void q8a_sums(struct q8act *a)
{
	for (int h = 0; h < q8a_padded(a->n) / (Q8A_BLOCK / 2); h++) {
		int32_t sum = 0;
		for (int i = 0; i < Q8A_BLOCK / 2; i++)
			sum += a->q[h * (Q8A_BLOCK / 2) + i];
		a->hsums[h] = sum;
	}
	for (int b = 0; b < q8a_padded(a->n) / Q8A_BLOCK; b++)
		a->sums[b] = a->hsums[2 * b] + a->hsums[2 * b + 1];
}

void q8a_quantize_scalar(const float *x, int n, struct q8act *a)
{
	int np = q8a_padded(n);
	a->n = n;
	for (int b = 0; b < np; b += Q8A_BLOCK) {
		int e = b + Q8A_BLOCK < n ? b + Q8A_BLOCK : n;
		a->scales[b / Q8A_BLOCK] = symmetric(x + b, e - b, 127, a->q + b);
		memset(a->q + e, 0, (size_t)(b + Q8A_BLOCK - e));
		for (int i = b; i < e; i++)
			if (isnan(x[i])) {
				a->scales[b / Q8A_BLOCK] = NAN;
				memset(a->q + b, 0, Q8A_BLOCK);
				break;
			}
	}
	q8a_sums(a);
}
