/* kquant: see kquant.h. The scalar reference is compiled for baseline
 * x86-64 (no FMA), so every product and sum of the dequantization is
 * rounded on its own, as ggml's is. */
#include "kernels/kquant.h"
#include "kernels/matmul.h"
#include "kernels/qtile.h"

#include <string.h>

/* Floats of rows dequantized at a time by the exact mode (128 KiB of stack):
 * at least one row. */
#define KQ_SCRATCH KQ_MAX_COLS

int kq_bits(enum wtype t)
{
	return t == WT_Q4K ? 4 : t == WT_Q5K ? 5 : 6;
}

size_t kq_rec_bytes(enum wtype t)
{
	return kq_off_high(t) + KQ_HIGH_BYTES * (size_t)(kq_bits(t) - 4);
}

size_t kq_bytes(enum wtype t, int rows, int cols)
{
	size_t tiles = (size_t)(rows + KQ_TILE - 1) / KQ_TILE;
	return tiles * (size_t)(cols / KQ_SB) * kq_rec_bytes(t);
}

void kq_block_dequant(enum wtype t, const struct kq_block *b, float *y)
{
	if (t == WT_Q6K) {
		for (int e = 0; e < KQ_SB; e++) {
			float ds = b->d * (float)b->sc[e / 16];
			y[e] = ds * (float)(b->q[e] - 32);
		}
		return;
	}
	for (int i = 0; i < 8; i++) {
		float ds = b->d * (float)b->sc[i], dm = b->dmin * (float)b->m[i];
		for (int l = 0; l < 32; l++) {
			float p = ds * (float)b->q[32 * i + l];
			y[32 * i + l] = p - dm;
		}
	}
}

/* The codes of lane l in a record: block k's nibble vector j holds, at
 * byte 4 l + i, column 4 j + i (low nibble) and 16 + 4 j + i (high); its
 * high vectors (highbits.h) the bits above. */
static void put_codes(unsigned char *rec, enum wtype t, int l, const uint8_t *q)
{
	unsigned char *nib = rec + kq_off_nib(t), *hb = rec + kq_off_high(t);
	int nb = kq_bits(t) - 4;
	for (int k = 0; k < 8; k++) {
		qtile_put_nibbles(nib + 256 * k, l, q + 32 * k);
		if (nb)
			hb_put(hb + HB_VECTOR * nb * k, l, q + 32 * k, nb);
	}
}

static void get_codes(const unsigned char *rec, enum wtype t, int l, uint8_t *q)
{
	const unsigned char *nib = rec + kq_off_nib(t), *hb = rec + kq_off_high(t);
	int nb = kq_bits(t) - 4;
	for (int k = 0; k < 8; k++) {
		uint8_t *c = q + 32 * k;
		for (int j = 0; j < 4; j++)
			for (int i = 0; i < 4; i++) {
				unsigned char x = nib[256 * k + 64 * j + 4 * l + i];
				c[4 * j + i] = x & 15;
				c[16 + 4 * j + i] = x >> 4;
			}
		for (int i = 0; nb && i < 32; i++)
			c[i] |= (uint8_t)hb_get(hb + HB_VECTOR * nb * k, l, i, nb);
	}
}

void kq_put(const struct wmat *w, void *data, int r, int s, const struct kq_block *b)
{
	enum wtype t = w->type;
	int l = r % KQ_TILE;
	unsigned char *rec = (unsigned char *)data +
			     ((size_t)(r / KQ_TILE) * (size_t)(w->cols / KQ_SB) + (size_t)s) *
			     kq_rec_bytes(t);
	((float *)(rec + KQ_OFF_D))[l] = b->d;
	if (t == WT_Q6K) {
		for (int j = 0; j < 16; j++)
			((int8_t *)(rec + kq_off_sc(t)))[16 * j + l] = (int8_t)b->sc[j];
	} else {
		((float *)(rec + KQ_OFF_DMIN))[l] = b->dmin;
		for (int j = 0; j < 8; j++) {
			rec[kq_off_sc(t) + 16 * (size_t)j + (size_t)l] = (uint8_t)b->sc[j];
			rec[KQ_OFF_M + 16 * (size_t)j + (size_t)l] = (uint8_t)b->m[j];
		}
	}
	put_codes(rec, t, l, b->q);
}

void kq_get(const struct wmat *w, int r, int s, struct kq_block *b)
{
	enum wtype t = w->type;
	int l = r % KQ_TILE;
	const unsigned char *rec = kq_rec(w, r / KQ_TILE, s);
	memset(b, 0, sizeof *b);
	b->d = ((const float *)(rec + KQ_OFF_D))[l];
	if (t == WT_Q6K) {
		for (int j = 0; j < 16; j++)
			b->sc[j] = ((const int8_t *)(rec + kq_off_sc(t)))[16 * j + l];
	} else {
		b->dmin = ((const float *)(rec + KQ_OFF_DMIN))[l];
		for (int j = 0; j < 8; j++) {
			b->sc[j] = rec[kq_off_sc(t) + 16 * (size_t)j + (size_t)l];
			b->m[j] = rec[KQ_OFF_M + 16 * (size_t)j + (size_t)l];
		}
	}
	get_codes(rec, t, l, b->q);
}

void kq_dequant_row(const struct wmat *w, int r, float *out)
{
	struct kq_block b;
	for (int s = 0; s < w->cols / KQ_SB; s++) {
		kq_get(w, r, s, &b);
		kq_block_dequant(w->type, &b, out + (size_t)s * KQ_SB);
	}
}

/* The exact mode on f32, a level's float32 product: a block of rows
 * dequantized into a buffer on the stack, then multiplied there. Q5_0,
 * Q5_1 and IQ4 (lib/kernels/qtile.h) run it too. */
static inline __attribute__((always_inline)) void kq_exact(const struct kern_mm *m,
							    kern_mm_fn *f32)
{
	const struct wmat *w = m->w;
	float buf[KQ_SCRATCH];
	int n = KQ_SCRATCH / w->cols;
	for (int r = m->r0; r < m->r1; r += n) {
		int rows = m->r1 - r < n ? m->r1 - r : n;
		for (int i = 0; i < rows; i++)
			kern_row(w, r + i, buf + (size_t)i * (size_t)w->cols);
		struct wmat d = { .type = WT_F32, .rows = rows, .cols = w->cols, .data = buf };
		f32(&(struct kern_mm){ .y = m->y + r, .ldy = m->ldy, .w = &d, .r0 = 0, .r1 = rows,
				       .x = m->x, .ldx = m->ldx, .T = m->T });
	}
}

void kq_mm_scalar(const struct kern_mm *m)
{
	kq_exact(m, kern_mm_f32_scalar);
}

void kq_mm_avx2(const struct kern_mm *m)
{
	kq_exact(m, kern_mm_f32_avx2);
}

void kq_mm_avx512(const struct kern_mm *m)
{
	kq_exact(m, kern_mm_f32_avx512);
}

/* ---- int8 activations ---- */

void kq_q8a_scalar(const struct kern_mm *m)
{
	const struct wmat *w = m->w;
	const struct q8act *a = m->xa;
	int nsb = w->cols / KQ_SB;
	struct kq_block b;
	for (int t = 0; t < m->T; t++)
		for (int r = m->r0; r < m->r1; r++) {
			const int8_t *aq = a[t].q;
			float acc = 0;
			for (int s = 0; s < nsb; s++) {
				kq_get(w, r, s, &b);
				for (int kk = 0; kk < 8; kk++) {
					int k = 8 * s + kk, c0 = 32 * k;
					float as = a[t].scales[k];
					int sum[2] = { 0, 0 };
					for (int c = 0; c < 32; c++)
						sum[c / 16] += b.q[32 * kk + c] * aq[c0 + c];
					if (w->type == WT_Q6K) {
						for (int half = 0; half < 2; half++) {
							int isum = sum[half] - 32 * a[t].hsums[2 * k + half];
							float ds = b.d * (float)b.sc[2 * kk + half];
							acc = fmaf((float)isum, ds * as, acc);
						}
					} else {
						float ds = b.d * (float)b.sc[kk], dm = b.dmin * (float)b.m[kk];
						acc = fmaf((float)(sum[0] + sum[1]), ds * as, acc);
						acc = fmaf(-(float)a[t].sums[k], dm * as, acc);
					}
				}
			}
			m->y[(size_t)t * (size_t)m->ldy + (size_t)r] = acc;
		}
}
