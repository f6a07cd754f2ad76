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

/* Where column c (0..255) of lane l sits in a record: the nibble's byte,
 * whether it is the high nibble, and the plane word and bit. */
struct kq_pos {
	size_t nib;
	int high;
	size_t word;
	int bit;
};

static struct kq_pos pos_of(int l, int c)
{
	int k = c / 32, cc = c % 32, g = cc / 4, i = cc % 4;
	return (struct kq_pos){ .nib = (size_t)k * 256 + (size_t)(g & 3) * 64 + (size_t)(4 * l + i),
				.high = g >> 2, .word = (size_t)k * 8 + (size_t)g, .bit = 4 * l + i };
}

void kq_put(const struct wmat *w, void *data, int r, int s, const struct kq_block *b)
{
	enum wtype t = w->type;
	int l = r % KQ_TILE, planes = kq_bits(t) - 4;
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
	unsigned char *nib = rec + kq_off_nib(t);
	uint64_t *plane = (uint64_t *)(rec + kq_off_plane(t));
	for (int c = 0; c < KQ_SB; c++) {
		struct kq_pos p = pos_of(l, c);
		nib[p.nib] |= (unsigned char)((b->q[c] & 15) << (4 * p.high));
		for (int j = 0; j < planes; j++)
			plane[64 * (size_t)j + p.word] |= (uint64_t)((b->q[c] >> (4 + j)) & 1) << p.bit;
	}
}

void kq_get(const struct wmat *w, int r, int s, struct kq_block *b)
{
	enum wtype t = w->type;
	int l = r % KQ_TILE, planes = kq_bits(t) - 4;
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
	const unsigned char *nib = rec + kq_off_nib(t);
	const uint64_t *plane = (const uint64_t *)(rec + kq_off_plane(t));
	for (int c = 0; c < KQ_SB; c++) {
		struct kq_pos p = pos_of(l, c);
		int q = (nib[p.nib] >> (4 * p.high)) & 15;
		for (int j = 0; j < planes; j++)
			q |= (int)((plane[64 * (size_t)j + p.word] >> p.bit) & 1) << (4 + j);
		b->q[c] = (uint8_t)q;
	}
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
	kq_q8a_fn *fn = quant_q8a_vnni(level) ? kq_q8a_vnni
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
