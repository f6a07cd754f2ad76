/* kquant: see kquant.h. The scalar reference is compiled for baseline
 * x86-64 (no FMA), so every product and sum of the dequantization is
 * rounded on its own, as ggml's is. */
#include "kernels/kquant.h"

#include <string.h>

/* Floats of rows dequantized at a time by kq_matmul (128 KiB of stack):
 * at least one row. */
#define KQ_SCRATCH KQ_MAX_COLS

int kq_bits(enum wtype t)
{
	return t == WT_Q4K ? 4 : t == WT_Q5K ? 5 : 6;
}

size_t kq_rec_bytes(enum wtype t)
{
	return kq_off_plane(t) + KQ_PLANE_BYTES * (size_t)(kq_bits(t) - 4);
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
 * byte 4 l + i, column 4 j + i (low nibble) and 16 + 4 j + i (high); plane
 * p's word g of block k holds bit 4 + p of column 4 g + i at bit 4 l + i. */
static void put_codes(unsigned char *rec, enum wtype t, int l, const uint8_t *q)
{
	unsigned char *nib = rec + kq_off_nib(t), *pl = rec + kq_off_plane(t);
	int planes = kq_bits(t) - 4;
	for (int k = 0; k < 8; k++) {
		const uint8_t *c = q + 32 * k;
		for (int j = 0; j < 4; j++)
			for (int i = 0; i < 4; i++)
				nib[256 * k + 64 * j + 4 * l + i] =
					(unsigned char)((c[4 * j + i] & 15) | (c[16 + 4 * j + i] & 15) << 4);
		for (int p = 0; p < planes; p++)
			for (int g = 0; g < 8; g++) {
				uint64_t m;
				unsigned char *at = pl + KQ_PLANE_BYTES * p + 64 * k + 8 * g;
				memcpy(&m, at, 8);
				for (int i = 0; i < 4; i++)
					m |= (uint64_t)((c[4 * g + i] >> (4 + p)) & 1) << (4 * l + i);
				memcpy(at, &m, 8);
			}
	}
}

static void get_codes(const unsigned char *rec, enum wtype t, int l, uint8_t *q)
{
	const unsigned char *nib = rec + kq_off_nib(t), *pl = rec + kq_off_plane(t);
	int planes = kq_bits(t) - 4;
	for (int k = 0; k < 8; k++) {
		uint8_t *c = q + 32 * k;
		for (int j = 0; j < 4; j++)
			for (int i = 0; i < 4; i++) {
				unsigned char x = nib[256 * k + 64 * j + 4 * l + i];
				c[4 * j + i] = x & 15;
				c[16 + 4 * j + i] = x >> 4;
			}
		for (int p = 0; p < planes; p++)
			for (int g = 0; g < 8; g++) {
				uint64_t m;
				memcpy(&m, pl + KQ_PLANE_BYTES * p + 64 * k + 8 * g, 8);
				unsigned bits = (unsigned)(m >> (4 * l)) & 15;
				for (int i = 0; i < 4; i++)
					c[4 * g + i] |= (uint8_t)(((bits >> i) & 1) << (4 + p));
			}
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

void kq_matmul(const struct kernels *k, const struct wmat *w, float *y, int ldy, int r0,
	       int r1, const float *x, int ldx, int T)
{
	float buf[KQ_SCRATCH];
	int n = KQ_SCRATCH / w->cols;
	for (int r = r0; r < r1; r += n) {
		int m = r1 - r < n ? r1 - r : n;
		for (int i = 0; i < m; i++)
			kq_dequant_row(w, r + i, buf + (size_t)i * (size_t)w->cols);
		k->matmul_f32(y + r, ldy, buf, w->cols, 0, 0, m, x, ldx, T);
	}
}

/* ---- int8 activations ---- */

void kq_q8a_scalar(const struct wmat *w, float *y, int ldy, int r0, int r1,
		   const struct q8act *a, const int *hs, int T)
{
	int nsb = w->cols / KQ_SB, nh = w->cols / 16;
	struct kq_block b;
	for (int t = 0; t < T; t++)
		for (int r = r0; r < r1; r++) {
			const int8_t *aq = a[t].q;
			const int *h = hs + (size_t)t * (size_t)nh;
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
							int isum = sum[half] - 32 * h[2 * k + half];
							float ds = b.d * (float)b.sc[2 * kk + half];
							acc = fmaf((float)isum, ds * as, acc);
						}
					} else {
						float ds = b.d * (float)b.sc[kk], dm = b.dmin * (float)b.m[kk];
						int bsum = h[2 * k] + h[2 * k + 1];
						acc = fmaf((float)(sum[0] + sum[1]), ds * as, acc);
						acc = fmaf(-(float)bsum, dm * as, acc);
					}
				}
			}
			y[(size_t)t * (size_t)ldy + (size_t)r] = acc;
		}
}

void kq_matmul_q8a(enum cpu_level level, const struct wmat *w, float *y, int ldy,
		   int r0, int r1, const struct q8act *a, int T)
{
	/* the half-block sums of up to `chunk` inputs at a time, on the stack */
	enum { HS = KQ_MAX_COLS / 16 * 2 };
	int hs[HS], nh = w->cols / 16, chunk = HS / nh;
	kq_q8a_fn *fn = level == CPU_AVX512 && quant_has_vnni() ? kq_q8a_vnni
			: level >= CPU_AVX2 ? kq_q8a_avx2 : kq_q8a_scalar;
	for (int t0 = 0; t0 < T; t0 += chunk) {
		int n = T - t0 < chunk ? T - t0 : chunk;
		for (int t = 0; t < n; t++)
			for (int h = 0; h < nh; h++) {
				int s = 0;
				for (int c = 0; c < 16; c++)
					s += a[t0 + t].q[16 * h + c];
				hs[t * nh + h] = s;
			}
		fn(w, y + (size_t)t0 * (size_t)ldy, ldy, r0, r1, a + t0, hs, n);
	}
}
