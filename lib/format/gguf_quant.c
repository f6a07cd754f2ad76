/* gguf_quant: ggml's block formats dequantized to float32, exactly.
 *
 * "Exactly" means bit for bit what ggml's reference dequantize_row_* and
 * llama.cpp's gguf-py (numpy) compute: the same float32 operations in the
 * same order, one rounding each. The block scales are IEEE halves
 * (widened exactly); each value is then scale * q, or scale * q + min
 * (Q4_1, Q5_1), or (d * sc) * q - (dmin * m) (Q4_K, Q5_K), or (d * sc) * q
 * (Q6_K), with every product and sum rounded to float32 on its own. This
 * file is compiled for baseline x86-64, which has no FMA, so the compiler
 * cannot fuse a product and a sum (the Makefile gives -mfma only to the
 * *_avx2.c, *_avx512.c and *_vnni.c files).
 *
 * Block layouts (QK = elements per block; all little-endian):
 *   Q4_0  32  f16 d, u8 qs[16]: x[j] = lo(qs[j]) - 8, x[j+16] = hi(qs[j]) - 8
 *   Q4_1  32  f16 d, f16 m, u8 qs[16]: as Q4_0 without the -8, plus m
 *   Q5_0  32  f16 d, u32 qh, u8 qs[16]: as Q4_0 with bit j (j+16) of qh as
 *             the fifth bit, minus 16
 *   Q5_1  32  f16 d, f16 m, u32 qh, u8 qs[16]: as Q5_0 without the -16, plus m
 *   Q8_0  32  f16 d, i8 qs[32]
 *   Q4_K 256  f16 d, f16 dmin, u8 scales[12] (eight 6-bit scales and mins),
 *             u8 qs[128]: sub-block 2g is the low nibbles of qs[32g..32g+32),
 *             2g+1 the high ones
 *   Q5_K 256  as Q4_K with u8 qh[32] before qs: bit i of qh[l] is the fifth
 *             bit of element l of sub-block i
 *   Q6_K 256  u8 ql[128], u8 qh[64], i8 scales[16], f16 d: 16 sub-blocks
 *             of 16, values minus 32
 * The K-quants are decoded into lib/kernels/kquant.h's struct kq_block,
 * whose kq_block_dequant is the one definition of their values.
 */
#include "format/gguf.h"
#include "core/bf16.h"
#include "kernels/kquant.h"

#include <math.h>
#include <string.h>

static float half(const unsigned char *p)
{
	return f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

static void q4_0(const unsigned char *b, float *y)
{
	float d = half(b);
	for (int j = 0; j < 16; j++) {
		y[j] = d * (float)((b[2 + j] & 15) - 8);
		y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
	}
}

static void q4_1(const unsigned char *b, float *y)
{
	float d = half(b), m = half(b + 2);
	for (int j = 0; j < 16; j++) {
		float p0 = d * (float)(b[4 + j] & 15), p1 = d * (float)(b[4 + j] >> 4);
		y[j] = p0 + m;
		y[j + 16] = p1 + m;
	}
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

float gguf_q5_0_codes(const void *block, int8_t *q)
{
	const unsigned char *b = block;
	uint32_t qh = le32(b + 2);
	const unsigned char *qs = b + 6;
	for (int j = 0; j < 16; j++) {
		q[j] = (int8_t)(((qs[j] & 15) | (int)((qh >> j) & 1) << 4) - 16);
		q[j + 16] = (int8_t)(((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - 16);
	}
	return half(b);
}

static void q5_0(const unsigned char *b, float *y)
{
	int8_t q[32];
	float d = gguf_q5_0_codes(b, q);
	for (int j = 0; j < 32; j++)
		y[j] = d * (float)q[j];
}

static void q5_1(const unsigned char *b, float *y)
{
	float d = half(b), m = half(b + 2);
	uint32_t qh = le32(b + 4);
	const unsigned char *qs = b + 8;
	for (int j = 0; j < 16; j++) {
		int x0 = (qs[j] & 15) | (int)((qh >> j) & 1) << 4;
		int x1 = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
		float p0 = d * (float)x0, p1 = d * (float)x1;
		y[j] = p0 + m;
		y[j + 16] = p1 + m;
	}
}

static void q8_0(const unsigned char *b, float *y)
{
	float d = half(b);
	for (int j = 0; j < 32; j++)
		y[j] = d * (float)(int8_t)b[2 + j];
}

/* Scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K and
 * Q5_K: j < 4 in the low 6 bits of q[j] and q[j+4]; j >= 4 split between
 * q[j+4]'s nibbles and the top 2 bits of q[j-4] and q[j]. */
static void scale_min(int j, const unsigned char *q, int *sc, int *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4;
		*m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
	}
}

enum wtype gguf_kq_wtype(enum gguf_ttype t)
{
	return t == GGML_Q4_K ? WT_Q4K : t == GGML_Q5_K ? WT_Q5K : WT_Q6K;
}

void gguf_kdecode(enum gguf_ttype t, const void *block, struct kq_block *k)
{
	const unsigned char *b = block;
	if (t == GGML_Q6_K) {
		const unsigned char *ql = b, *qh = b + 128;
		k->d = half(b + 208);
		k->dmin = 0;
		for (int j = 0; j < 16; j++)
			k->sc[j] = (int8_t)b[192 + j];
		for (int e = 0; e < 256; e++) {
			int h = e / 128, w = e % 128;
			int lo = (ql[64 * h + w % 64] >> (4 * (w / 64))) & 15;
			int hi = (qh[32 * h + w % 32] >> (2 * (w / 32))) & 3;
			k->q[e] = (uint8_t)(lo | hi << 4);
		}
		return;
	}
	/* Q4_K, Q5_K: eight sub-blocks of 32; Q5_K adds a fifth bit per
	 * weight from qh (bit i of qh[l] for element l of sub-block i) */
	const unsigned char *qh = t == GGML_Q5_K ? b + 16 : NULL, *qs = qh ? b + 48 : b + 16;
	k->d = half(b);
	k->dmin = half(b + 2);
	for (int i = 0; i < 8; i++) {
		scale_min(i, b + 4, &k->sc[i], &k->m[i]);
		const unsigned char *q = qs + 32 * (i / 2);
		int shift = 4 * (i % 2);
		for (int l = 0; l < 32; l++) {
			int x = (q[l] >> shift) & 15;
			if (qh)
				x |= ((qh[l] >> i) & 1) << 4;
			k->q[32 * i + l] = (uint8_t)x;
		}
	}
}

int64_t gguf_bad_scale(enum gguf_ttype t, const void *src, uint64_t n)
{
	const unsigned char *s = src;
	uint64_t bs = gguf_ttype_size(t);
	size_t at[2] = { 0, 2 };  /* d, dmin of Q4_K and Q5_K */
	int nat = 2;
	if (t == GGML_Q6_K) {
		at[0] = 208;
		nat = 1;
	} else if (t != GGML_Q4_K && t != GGML_Q5_K) {
		return -1;
	}
	for (uint64_t i = 0; i < n / KQ_SB; i++)
		for (int j = 0; j < nat; j++)
			if (!isfinite(half(s + i * bs + at[j])))
				return (int64_t)i;
	return -1;
}

bool gguf_narrow_bf16(float *v, uint64_t n)
{
	uint32_t u;
	for (uint64_t i = 0; i < n; i++) {
		memcpy(&u, &v[i], 4);
		if (u & 0xffff)
			return false;
	}
	uint16_t *h = (uint16_t *)v;  /* h[i] is written after v[i] was read */
	for (uint64_t i = 0; i < n; i++) {
		memcpy(&u, &v[i], 4);
		h[i] = (uint16_t)(u >> 16);
	}
	return true;
}

bool gguf_can_dequant(enum gguf_ttype t)
{
	switch (t) {
	case GGML_F32: case GGML_F16: case GGML_BF16: case GGML_Q4_0: case GGML_Q4_1:
	case GGML_Q5_0: case GGML_Q5_1: case GGML_Q8_0: case GGML_Q4_K: case GGML_Q5_K:
	case GGML_Q6_K:
		return true;
	default:
		return false;
	}
}

int gguf_dequant(enum gguf_ttype t, const void *src, uint64_t n, float *dst)
{
	const unsigned char *s = src;
	void (*block)(const unsigned char *, float *) = NULL;
	switch (t) {
	case GGML_F32:
		memcpy(dst, s, n * 4);
		return 0;
	case GGML_F16:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = half(s + 2 * i);
		return 0;
	case GGML_BF16:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = bf16_to_f32((uint16_t)(s[2 * i] | s[2 * i + 1] << 8));
		return 0;
	case GGML_Q4_0: block = q4_0; break;
	case GGML_Q4_1: block = q4_1; break;
	case GGML_Q5_0: block = q5_0; break;
	case GGML_Q5_1: block = q5_1; break;
	case GGML_Q8_0: block = q8_0; break;
	case GGML_Q4_K:
	case GGML_Q5_K:
	case GGML_Q6_K: {
		/* decoded, then the values by kquant.h's definition */
		struct kq_block k;
		for (uint64_t i = 0; i < n / KQ_SB; i++) {
			gguf_kdecode(t, s + i * gguf_ttype_size(t), &k);
			kq_block_dequant(gguf_kq_wtype(t), &k, dst + i * KQ_SB);
		}
		return 0;
	}
	default:
		return -1;
	}
	uint64_t qk = gguf_ttype_block(t), bs = gguf_ttype_size(t);
	for (uint64_t i = 0; i < n / qk; i++)
		block(s + i * bs, dst + i * qk);
	return 0;
}

/* ---- quantizing: ggml's reference quantizers (quantize_row_*_ref) ---- */

static void put_half(unsigned char *p, float x)
{
	uint16_t h = f32_to_f16(x);
	p[0] = (unsigned char)h;
	p[1] = (unsigned char)(h >> 8);
}

/* d = max|x| / 127, q = round(x / d) through x * (1 / d), half away from
 * zero; d stored as a half, the codes made with the float d. */
static void quant_q8_0(const float *x, unsigned char *b)
{
	float amax = 0;
	for (int j = 0; j < 32; j++)
		amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
	float d = amax / 127, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	for (int j = 0; j < 32; j++)
		b[2 + j] = (unsigned char)(int8_t)roundf(x[j] * id);
}

/* m = the weight of largest magnitude (the first on ties), d = m / -8, so m
 * is code 0 (-8 d); codes trunc(x / d + 8.5) capped at 15. */
static void quant_q4_0(const float *x, unsigned char *b)
{
	float amax = 0, max = 0;
	for (int j = 0; j < 32; j++)
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	float d = max / -8, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	for (int j = 0; j < 16; j++) {
		int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[16 + j] * id + 8.5f);
		q0 = q0 < 15 ? q0 : 15;
		q1 = q1 < 15 ? q1 : 15;
		b[2 + j] = (unsigned char)(q0 | q1 << 4);
	}
}

bool gguf_can_quant(enum gguf_ttype t)
{
	return t == GGML_F32 || t == GGML_F16 || t == GGML_BF16 || t == GGML_Q8_0 ||
	       t == GGML_Q4_0;
}

int gguf_quant(enum gguf_ttype t, const float *src, uint64_t n, void *dst)
{
	unsigned char *d = dst;
	void (*block)(const float *, unsigned char *) = NULL;
	switch (t) {
	case GGML_F32:
		memcpy(d, src, n * 4);
		return 0;
	case GGML_F16:
		for (uint64_t i = 0; i < n; i++)
			put_half(d + 2 * i, src[i]);
		return 0;
	case GGML_BF16:
		for (uint64_t i = 0; i < n; i++) {
			uint16_t h = f32_to_bf16(src[i]);
			d[2 * i] = (unsigned char)h;
			d[2 * i + 1] = (unsigned char)(h >> 8);
		}
		return 0;
	case GGML_Q8_0: block = quant_q8_0; break;
	case GGML_Q4_0: block = quant_q4_0; break;
	default:
		return -1;
	}
	uint64_t bs = gguf_ttype_size(t);
	for (uint64_t i = 0; i < n / 32; i++)
		block(src + 32 * i, d + bs * i);
	return 0;
}
