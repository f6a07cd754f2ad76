/* qtile: see qtile.h. The layout, the repacking and the scalar
 * reference. */
#include "kernels/qtile.h"
#include "kernels/qtile_isa.h"
#include "core/bf16.h"

#include <math.h>
#include <string.h>

/* The kind of scales of a tiled matrix. */
static enum qtile_scales scales_of(const struct wmat *w)
{
	return (enum qtile_scales)(w->tiled - 1);
}

static int nblocks(int cols)
{
	return (cols + Q8A_BLOCK - 1) / Q8A_BLOCK;
}

/* A tile's groups (qtile.h), and the bytes of a whole one. */
static int ngroups(enum wtype type, enum qtile_scales s, int nb)
{
	int G = qtile_group(type, s);
	return G ? (nb + G - 1) / G : 1;
}

static size_t group_bytes(enum wtype type, enum qtile_scales s)
{
	return QTILE_LINE + (size_t)qtile_group(type, s) * qtile_code_bytes(type);
}

/* Where in its tile block b's line of scales starts, and its codes. */
static size_t line_at(enum wtype type, enum qtile_scales s, int b)
{
	int G = qtile_group(type, s);
	return G ? (size_t)(b / G) * group_bytes(type, s) : 0;
}

static size_t codes_at(enum wtype type, enum qtile_scales s, int b)
{
	int G = qtile_group(type, s);
	return line_at(type, s, b) + QTILE_LINE + (size_t)(G ? b % G : b) * qtile_code_bytes(type);
}

/* Where in its tile lane l's scale of block b is (QT_ROW: the row's);
 * Q5_1's min is QTILE_MINS bytes further. */
static size_t scale_at(enum wtype type, enum qtile_scales s, int b, int l)
{
	if (s == QT_ROW)
		return (size_t)l * sizeof(float);
	size_t size = s == QT_F16 ? 2 : sizeof(float);
	return line_at(type, s, b) +
	       ((size_t)(b % qtile_group(type, s)) * QTILE_ROWS + (size_t)l) * size;
}

size_t qtile_tile_bytes(enum wtype type, int cols, enum qtile_scales s)
{
	int nb = nblocks(cols);
	return (size_t)ngroups(type, s, nb) * QTILE_LINE + (size_t)nb * qtile_code_bytes(type);
}

void qtile_geom(const struct wmat *w, struct qtile_geom *g)
{
	g->s = scales_of(w);
	g->nb = nblocks(w->cols);
	g->tile = qtile_tile_bytes(w->type, w->cols, g->s);
}

size_t qtile_bytes(enum wtype type, int rows, int cols, enum qtile_scales s)
{
	size_t tiles = (size_t)(rows + QTILE_ROWS - 1) / QTILE_ROWS;
	return tiles * qtile_tile_bytes(type, cols, s);
}

enum qtile_scales qtile_scales_for(const struct wmat *src)
{
	if (!wmat_grouped(src))
		return QT_ROW;
	size_t n = q4_nscales(src->rows, src->cols, src->group_size);
	for (size_t i = 0; i < n; i++) {
		float s = src->scales[i];
		if (f16_to_f32(f32_to_f16(s)) != s)
			return QT_F32;
	}
	return QT_F16;
}

/* Where row r's tile starts. */
static const uint8_t *tile_at(const struct wmat *w, int r)
{
	return (const uint8_t *)w->data +
	       (size_t)(r / QTILE_ROWS) * qtile_tile_bytes(w->type, w->cols, scales_of(w));
}

/* The byte holding weight (l, c) of a tile (its row in the tile, its
 * column), from the start of the tile; for int4 and Q5 *hi says which
 * nibble. */
static size_t code_at(enum wtype type, enum qtile_scales s, int l, int c, int *hi)
{
	int b = c / Q8A_BLOCK, j = c % Q8A_BLOCK;
	*hi = 0;
	if (type != WT_Q8) {
		*hi = j >= 16;
		j %= 16;
	}
	return codes_at(type, s, b) + (size_t)(j / 4) * 64 + (size_t)l * 4 + (size_t)(j % 4);
}

int qtile_code(const struct wmat *w, int r, int c)
{
	const uint8_t *t = tile_at(w, r);
	int hi, l = r % QTILE_ROWS;
	uint8_t byte = t[code_at(w->type, scales_of(w), l, c, &hi)];
	if (w->type == WT_Q8)
		return (int)byte - 128;
	int u = hi ? byte >> 4 : byte & 15;
	if (w->type == WT_Q4)
		return u - 8;
	if (w->type == WT_IQ4)
		return qtile_iq4_level[u];
	u |= hb_get(t + codes_at(w->type, scales_of(w), c / Q8A_BLOCK) + 256, l, c % Q8A_BLOCK, 1);
	return w->type == WT_Q50 ? u - 16 : u;
}

/* The scale of kind s at byte at of tile t: a half, widened, or a float
 * (QT_F32 and QT_ROW). */
static float scale_read(const uint8_t *t, size_t at, enum qtile_scales s)
{
	if (s == QT_F16) {
		uint16_t h;
		memcpy(&h, t + at, 2);
		return f16_to_f32(h);
	}
	float f;
	memcpy(&f, t + at, sizeof f);
	return f;
}

/* Q5_1's min of weight (r, c). */
static float q5_min(const struct wmat *w, int r, int c)
{
	return scale_read(tile_at(w, r),
			  scale_at(WT_Q51, QT_F16, c / Q8A_BLOCK, r % QTILE_ROWS) + QTILE_MINS,
			  QT_F16);
}

float qtile_scale(const struct wmat *w, int r, int c)
{
	enum qtile_scales s = scales_of(w);
	return scale_read(tile_at(w, r), scale_at(w->type, s, c / Q8A_BLOCK, r % QTILE_ROWS), s);
}

/* A block's scale sc into its place at, as a half (exactly, QT_F16) or a
 * float. */
static void put_scale(uint8_t *at, enum qtile_scales s, float sc)
{
	if (s == QT_F16) {
		uint16_t h = f32_to_f16(sc);
		memcpy(at, &h, 2);
	} else {
		memcpy(at, &sc, sizeof sc);
	}
}

/* Row r of src into the codes of its tile t (scales s), as lane l. Four
 * columns at a time where they exist whole: the int4 row's packing
 * (lib/kernels/quant.h) already pairs column 4k + j with 16 + 4k + j in a
 * byte, as a chunk does, and int8 codes just move by 128 (their top bit
 * flips). */
static void pack_row(const struct wmat *src, enum qtile_scales s, int r, uint8_t *t, int l,
		     int zero)
{
	int c = 0, q4 = src->type == WT_Q4;
	for (; c + Q8A_BLOCK <= src->cols && q4; c += Q8A_BLOCK) {
		const uint8_t *b = (const uint8_t *)src->data + (size_t)r * (size_t)src->cols / 2 +
				   (size_t)c / 2;
		uint8_t *codes = t + codes_at(WT_Q4, s, c / Q8A_BLOCK);
		for (int k = 0; k < 4; k++)
			memcpy(codes + (size_t)k * 64 + (size_t)l * 4, b + 4 * k, 4);
	}
	for (; c + 4 <= src->cols && !q4; c += 4) {
		uint32_t v;
		memcpy(&v, (const int8_t *)src->data + wmat_at(src, r, c), 4);
		v ^= 0x80808080u;
		memcpy(t + codes_at(WT_Q8, s, c / Q8A_BLOCK) + (size_t)(c % Q8A_BLOCK / 4) * 64 +
		       (size_t)l * 4, &v, 4);
	}
	for (; c < src->cols; c++) {
		int hi, u = quant_code(src, r, c) + zero;
		uint8_t *byte = t + code_at(src->type, s, l, c, &hi);
		if (!q4)
			*byte = (uint8_t)u;
		else if (hi)
			*byte = (uint8_t)((*byte & 15) | u << 4);
		else
			*byte = (uint8_t)((*byte & 0xf0) | u);
	}
}

void qtile_pack_rows(const struct wmat *src, enum qtile_scales s, void *dst, int r0, int r1)
{
	enum wtype type = src->type;
	int nb = nblocks(src->cols), zero = type == WT_Q4 ? 8 : 128;
	size_t tb = qtile_tile_bytes(type, src->cols, s);
	uint8_t *p = (uint8_t *)dst + (size_t)(r0 / QTILE_ROWS) * tb;
	for (; r0 < r1; r0 += QTILE_ROWS, p += tb) {
		memset(p, type == WT_Q4 ? 0x88 : zero, tb);  /* every code 0 */
		for (int g = 0; g < ngroups(type, s, nb); g++)
			memset(p + (size_t)g * group_bytes(type, s), 0, QTILE_LINE);
		for (int l = 0; l < QTILE_ROWS && r0 + l < src->rows; l++) {
			int r = r0 + l;
			if (s == QT_ROW)
				memcpy(p + scale_at(type, s, 0, l), &src->scales[r], sizeof(float));
			for (int b = 0; b < nb && s != QT_ROW; b++)
				put_scale(p + scale_at(type, s, b, l), s, quant_scale(src, r, b * Q8A_BLOCK));
			pack_row(src, s, r, p, l, zero);
		}
	}
}

void qtile_view(const struct wmat *src, enum qtile_scales s, void *dst, struct wmat *out)
{
	*out = (struct wmat){ .type = src->type, .rows = src->rows, .cols = src->cols,
			      .data = dst, .group_size = wmat_grouped(src) ? Q8A_BLOCK : 0,
			      .tiled = (int)s + 1 };
}

void qtile_pack(const struct wmat *src, void *dst, struct wmat *out)
{
	enum qtile_scales s = qtile_scales_for(src);
	qtile_pack_rows(src, s, dst, 0, src->rows);
	qtile_view(src, s, dst, out);
}

void qtile_q5_put(const struct wmat *w, void *data, int r, int b, const uint8_t u[32],
		  uint16_t d, uint16_t m)
{
	int l = r % QTILE_ROWS;
	uint8_t *t = (uint8_t *)data + (size_t)(r / QTILE_ROWS) * qtile_tile_bytes(w->type, w->cols,
										    QT_F16);
	size_t at = scale_at(w->type, QT_F16, b, l);
	memcpy(t + at, &d, 2);
	if (w->type == WT_Q51)
		memcpy(t + at + QTILE_MINS, &m, 2);
	uint8_t *codes = t + codes_at(w->type, QT_F16, b);
	qtile_put_nibbles(codes, l, u);
	hb_put(codes + 256, l, u, 1);
}

void qtile_iq4_put(const struct wmat *w, void *data, int r, int b, const uint8_t u[32],
		   float s)
{
	enum qtile_scales sk = scales_of(w);
	uint8_t *t = (uint8_t *)data + (size_t)(r / QTILE_ROWS) * qtile_tile_bytes(WT_IQ4, w->cols, sk);
	put_scale(t + scale_at(WT_IQ4, sk, b, r % QTILE_ROWS), sk, s);
	qtile_put_nibbles(t + codes_at(WT_IQ4, sk, b), r % QTILE_ROWS, u);
}

/* Row l of a Q5 or IQ4 tile's block at codes, scale s (and Q5_1's min
 * mn), into o[32]: chunk k holds columns 4k + j and 16 + 4k + j in the
 * nibbles of byte 4l + j, Q5's high vector after the chunks their fifth
 * bits. */
static inline void block_row(const uint8_t *codes, int l, float s, float mn,
			     const enum wtype type, float *o)
{
	for (int k = 0; k < 4; k++) {
		uint32_t q;
		memcpy(&q, codes + 64 * k + 4 * l, 4);
		for (int j = 0; j < 4; j++)
			for (int h = 0; h < 2; h++) {
				int c = 16 * h + 4 * k + j, u = (int)(q >> (8 * j + 4 * h) & 15);
				if (type == WT_IQ4) {
					o[c] = s * (float)qtile_iq4_level[u];
					continue;
				}
				u |= hb_get(codes + 256, l, c, 1);
				if (type == WT_Q51) {
					float p = s * (float)u;
					o[c] = p + mn;
				} else {
					o[c] = s * (float)(u - 16);
				}
			}
	}
}

void qtile_gguf_row(const struct wmat *w, int r, float *out)
{
	enum qtile_scales sk = scales_of(w);
	int nb = nblocks(w->cols), l = r % QTILE_ROWS;
	const uint8_t *t = tile_at(w, r);
	for (int b = 0; b < nb; b++) {
		size_t at = scale_at(w->type, sk, b, l);
		const uint8_t *codes = t + codes_at(w->type, sk, b);
		float s = scale_read(t, at, sk);
		if (w->type == WT_Q51)
			block_row(codes, l, s, scale_read(t, at + QTILE_MINS, QT_F16), WT_Q51,
				  out + 32 * b);
		else if (w->type == WT_Q50)
			block_row(codes, l, s, 0, WT_Q50, out + 32 * b);
		else
			block_row(codes, l, s, 0, WT_IQ4, out + 32 * b);
	}
}

/* ---- the scalar reference ---- */

void qtile_mm_scalar(const struct kern_mm *m)
{
	const struct wmat *w = m->w;
	const struct q8act *a = m->xa;
	enum qtile_scales s = scales_of(w);
	int nb = nblocks(w->cols);
	for (int r = m->r0; r < m->r1; r++)
		for (int t = 0; t < m->T; t++) {
			float acc = 0;
			for (int b = 0; b < nb; b++) {
				int32_t d = 0;
				for (int c = b * Q8A_BLOCK; c < (b + 1) * Q8A_BLOCK && c < w->cols; c++)
					d += qtile_code(w, r, c) * a[t].q[c];
				float sc = a[t].scales[b];
				if (s != QT_ROW)
					sc *= qtile_scale(w, r, b * Q8A_BLOCK);
				acc = fmaf((float)d, sc, acc);
				if (w->type == WT_Q51)
					acc = fmaf((float)a[t].sums[b],
						   a[t].scales[b] * q5_min(w, r, b * Q8A_BLOCK), acc);
			}
			m->y[(size_t)t * m->ldy + r] = s == QT_ROW ? acc * qtile_scale(w, r, 0) : acc;
		}
}
