/* gguf_quant: ggml's block formats dequantized to float32, exactly, and
 * quantized from float32 as ggml's reference quantizers do (at the end).
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
 *   IQ4_NL 32 f16 d, u8 qs[16]: as Q4_0 with each nibble an index into a
 *             table of 16 levels (-127 .. 113, qtile.h's qtile_iq4_level)
 *             instead of minus 8: so an IQ4_NL block is a Q8_0 block with
 *             those levels as its codes
 *   IQ4_XS 256 f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]: 8 groups of
 *             32, group g an IQ4_NL block's nibbles (qs[16g..16g+16)) with
 *             the scale dl = d * (s - 32), s the 6 bits of nibble g of
 *             scales_l (low) and bits 2g, 2g+1 of scales_h (high):
 *             x = dl * level, dl exact in float32
 *   Q4_K 256  f16 d, f16 dmin, u8 scales[12] (eight 6-bit scales and mins),
 *             u8 qs[128]: sub-block 2g is the low nibbles of qs[32g..32g+32),
 *             2g+1 the high ones
 *   Q5_K 256  as Q4_K with u8 qh[32] before qs: bit i of qh[l] is the fifth
 *             bit of element l of sub-block i
 *   Q6_K 256  u8 ql[128], u8 qh[64], i8 scales[16], f16 d: 16 sub-blocks
 *             of 16, values minus 32
 *   Q3_K 256  u8 hmask[32], u8 qs[64], u8 scales[12] (sixteen 6-bit
 *             scales, minus 32), f16 d: 16 sub-blocks of 16; element e (h =
 *             e / 128, j = e % 128 / 32, l = e % 32) has 2 bits at shift 2j
 *             of qs[32h + l], minus 4 unless bit 4h + j of hmask[l] is set:
 *             x = (d * sc) * q, q in -4..3
 *   Q2_K 256  u8 scales[16] (a 4-bit scale, low, and min, high, each), u8
 *             qs[64], f16 d, f16 dmin: 16 sub-blocks of 16, 2 bits an
 *             element as Q3_K's: x = (d * sc) * q - (dmin * m), q in 0..3
 * The K-quants but Q2_K are decoded into lib/kernels/kquant.h's struct
 * kq_block, whose kq_block_dequant is the one definition of their values;
 * a Q3_K super-block is exactly a Q6_K one (its scales and codes shifted
 * into Q6_K's ranges: (d * (sc - 32)) * ((q + 32) - 32)). Q2_K has a
 * scale and a min per 16 elements, which no tile holds; it is only
 * dequantized (q2_k below).
 */
#include "format/gguf.h"
#include "core/bf16.h"
#include "kernels/kquant.h"
#include "kernels/qtile.h"

#include <float.h>
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

void gguf_q5_block(enum gguf_ttype t, const void *block, uint8_t u[32], uint16_t *d,
		   uint16_t *m)
{
	const unsigned char *b = block;
	int q51 = t == GGML_Q5_1;
	*d = (uint16_t)(b[0] | b[1] << 8);
	*m = q51 ? (uint16_t)(b[2] | b[3] << 8) : 0;
	uint32_t qh = le32(b + 2 + 2 * q51);
	const unsigned char *qs = b + 6 + 2 * q51;
	for (int j = 0; j < 16; j++) {
		u[j] = (uint8_t)((qs[j] & 15) | ((qh >> j) & 1) << 4);
		u[j + 16] = (uint8_t)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
	}
}

static void q5_0(const unsigned char *b, float *y)
{
	uint8_t u[32];
	uint16_t d, m;
	gguf_q5_block(GGML_Q5_0, b, u, &d, &m);
	float s = f16_to_f32(d);
	for (int j = 0; j < 32; j++)
		y[j] = s * (float)(u[j] - 16);
}

static void q5_1(const unsigned char *b, float *y)
{
	uint8_t u[32];
	uint16_t d, m;
	gguf_q5_block(GGML_Q5_1, b, u, &d, &m);
	float s = f16_to_f32(d), mn = f16_to_f32(m);
	for (int j = 0; j < 32; j++) {
		float p = s * (float)u[j];
		y[j] = p + mn;
	}
}

/* Element e's two bits in the 64 bytes qs of Q2_K and Q3_K. */
static int two_bits(const unsigned char *qs, int e)
{
	return (qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}

static void q2_k(const unsigned char *b, float *y)
{
	float d = half(b + 80), dmin = half(b + 82);
	for (int e = 0; e < 256; e++) {
		int sc = b[e / 16];
		float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
		float p = dl * (float)two_bits(b + 16, e);
		y[e] = p - ml;
	}
}

static void q8_0(const unsigned char *b, float *y)
{
	float d = half(b);
	for (int j = 0; j < 32; j++)
		y[j] = d * (float)(int8_t)b[2 + j];
}

/* The block of type t that holds group k (values 32k .. 32k + 31). */
static const unsigned char *group_block(enum gguf_ttype t, const void *data, uint64_t k)
{
	return (const unsigned char *)data + k / (gguf_ttype_block(t) / 32) * gguf_ttype_size(t);
}

float gguf_iq4_group(enum gguf_ttype t, const void *data, uint64_t k, uint8_t u[32])
{
	const unsigned char *b = group_block(t, data, k), *qs = b + 2;
	float s = half(b);
	if (t == GGML_IQ4_XS) {
		int g = (int)(k % 8);
		int lo = b[4 + g / 2] >> 4 * (g % 2) & 15, hi = (b[2] | b[3] << 8) >> 2 * g & 3;
		qs = b + 8 + 16 * g;
		s *= (float)((lo | hi << 4) - 32);
	}
	for (int j = 0; j < 16; j++) {
		u[j] = qs[j] & 15;
		u[j + 16] = qs[j] >> 4;
	}
	return s;
}

float gguf_int8_group(enum gguf_ttype t, const void *data, uint64_t k, int8_t q[32])
{
	if (t == GGML_Q8_0) {
		const unsigned char *b = group_block(t, data, k);
		memcpy(q, b + 2, 32);
		return half(b);
	}
	uint8_t u[32];
	float s = gguf_iq4_group(t, data, k, u);
	for (int j = 0; j < 32; j++)
		q[j] = qtile_iq4_level[u[j]];
	return s;
}

/* IQ4_NL, IQ4_XS: one block (32 values; a super-block of 256), a group of
 * 32 at a time. */
static void iq4_nl(const unsigned char *b, float *y)
{
	int8_t q[32];
	float d = gguf_int8_group(GGML_IQ4_NL, b, 0, q);
	for (int j = 0; j < 32; j++)
		y[j] = d * (float)q[j];
}

static void iq4_xs(const unsigned char *b, float *y)
{
	int8_t q[32];
	for (int g = 0; g < 8; g++) {
		float dl = gguf_int8_group(GGML_IQ4_XS, b, (uint64_t)g, q);
		for (int j = 0; j < 32; j++)
			y[32 * g + j] = dl * (float)q[j];
	}
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

enum wtype gguf_tile_wtype(enum gguf_ttype t)
{
	return t == GGML_Q4_K ? WT_Q4K : t == GGML_Q5_K ? WT_Q5K
	       : t == GGML_Q6_K || t == GGML_Q3_K ? WT_Q6K
	       : t == GGML_Q5_0 ? WT_Q50 : t == GGML_Q5_1 ? WT_Q51 : WT_IQ4;
}

void gguf_kdecode(enum gguf_ttype t, const void *block, struct kq_block *k)
{
	const unsigned char *b = block;
	if (t == GGML_Q3_K) {  /* as a Q6_K super-block (above) */
		const unsigned char *hm = b, *qs = b + 32, *sc = b + 96;
		k->d = half(b + 108);
		k->dmin = 0;
		for (int j = 0; j < 16; j++)
			k->sc[j] = (((sc[j % 8] >> (4 * (j / 8))) & 15) |
				    ((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
		for (int e = 0; e < 256; e++) {
			int high = (hm[e % 32] >> (e / 32)) & 1;
			k->q[e] = (uint8_t)(two_bits(qs, e) - (high ? 0 : 4) + 32);
		}
		return;
	}
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
	if (t == GGML_Q6_K || t == GGML_Q3_K) {
		at[0] = t == GGML_Q6_K ? 208 : 108;
		nat = 1;
	} else if (t == GGML_Q2_K) {
		at[0] = 80;
		at[1] = 82;
	} else if (t == GGML_IQ4_XS) {
		nat = 1;  /* d first */
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
	case GGML_Q5_0: case GGML_Q5_1: case GGML_Q8_0: case GGML_IQ4_NL: case GGML_IQ4_XS:
	case GGML_Q2_K: case GGML_Q3_K: case GGML_Q4_K: case GGML_Q5_K: case GGML_Q6_K:
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
	case GGML_IQ4_NL: block = iq4_nl; break;
	case GGML_IQ4_XS: block = iq4_xs; break;
	case GGML_Q2_K: block = q2_k; break;
	case GGML_Q3_K:
	case GGML_Q4_K:
	case GGML_Q5_K:
	case GGML_Q6_K: {
		/* decoded, then the values by kquant.h's definition */
		struct kq_block k;
		for (uint64_t i = 0; i < n / KQ_SB; i++) {
			gguf_kdecode(t, s + i * gguf_ttype_size(t), &k);
			kq_block_dequant(gguf_tile_wtype(t), &k, dst + i * KQ_SB);
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

/* The value of largest magnitude among x[0..n), the first on ties; 0 when
 * all are zero. */
static float extreme(const float *x, int n)
{
	float amax = 0, max = 0;
	for (int j = 0; j < n; j++)
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	return max;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (unsigned char)(v >> (8 * k));
}

/* m = the weight of largest magnitude (the first on ties), d = m / -8, so m
 * is code 0 (-8 d); codes trunc(x / d + 8.5) capped at 15. */
static void quant_q4_0(const float *x, unsigned char *b)
{
	float d = extreme(x, 32) / -8, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	for (int j = 0; j < 16; j++) {
		int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[16 + j] * id + 8.5f);
		q0 = q0 < 15 ? q0 : 15;
		q1 = q1 < 15 ? q1 : 15;
		b[2 + j] = (unsigned char)(q0 | q1 << 4);
	}
}

/* m = the weight of largest magnitude (the first on ties), d = m / -16;
 * codes trunc(x / d + 16.5) capped at 31, the fifth bits gathered in qh. */
static void quant_q5_0(const float *x, unsigned char *b)
{
	float d = extreme(x, 32) / -16, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	uint32_t qh = 0;
	for (int j = 0; j < 16; j++) {
		int q0 = (int)(x[j] * id + 16.5f), q1 = (int)(x[16 + j] * id + 16.5f);
		q0 = q0 < 31 ? q0 : 31;
		q1 = q1 < 31 ? q1 : 31;
		b[6 + j] = (unsigned char)((q0 & 15) | (q1 & 15) << 4);
		qh |= (uint32_t)(q0 >> 4) << j | (uint32_t)(q1 >> 4) << (j + 16);
	}
	put_le32(b + 2, qh);
}

/* d = (max - min) / 31, m = min; codes trunc((x - min) / d + 0.5). */
static void quant_q5_1(const float *x, unsigned char *b)
{
	float min = FLT_MAX, max = -FLT_MAX;
	for (int j = 0; j < 32; j++) {
		min = x[j] < min ? x[j] : min;
		max = x[j] > max ? x[j] : max;
	}
	float d = (max - min) / 31, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	put_half(b + 2, min);
	uint32_t qh = 0;
	for (int j = 0; j < 16; j++) {
		unsigned q0 = (uint8_t)((x[j] - min) * id + 0.5f);
		unsigned q1 = (uint8_t)((x[16 + j] - min) * id + 0.5f);
		b[8 + j] = (unsigned char)((q0 & 15) | (q1 & 15) << 4);
		qh |= (uint32_t)((q0 >> 4) & 1) << j | (uint32_t)((q1 >> 4) & 1) << (j + 16);
	}
	put_le32(b + 4, qh);
}

/* ---- the K-quants: ggml's reference searches (no importance matrix) ---- */

/* v rounded to the nearest integer, ties to even, for |v| < 2^22: adding
 * 1.5 * 2^23 leaves the integer in the low mantissa bits (ggml's
 * nearest_int, whose result the codes and scales must match). */
static int nearest(float v)
{
	float t = v + 12582912.0f;
	uint32_t u;
	memcpy(&u, &t, 4);
	return (int)(u & 0x7fffff) - 0x400000;
}

/* The affine fit of Q4_K and Q5_K's sub-blocks (ggml's make_qkx2_quants,
 * squared error): x[0..n) ~ scale * L + mn with mn <= 0 and codes L in
 * 0..nmax, weighted by w. Starting from the range [min(x, 0), max(x)], it
 * tries nstep + 1 more code spacings, (nmax + rmin + rdelta * is) per
 * range, each with the least-squares scale and min for its codes, and
 * keeps the one of least weighted error (the first on ties). Returns the
 * scale and -mn in *neg_min; L the codes. n is at most 32. */
static float fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L,
			float *neg_min, float rmin, float rdelta, int nstep)
{
	float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
	for (int i = 1; i < n; i++) {
		min = x[i] < min ? x[i] : min;
		max = x[i] > max ? x[i] : max;
		sum_w += w[i];
		sum_x += w[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, (size_t)n);
		*neg_min = -min;
		return 0;
	}
	float iscale = (float)nmax / (max - min), scale = 1 / iscale, best = 0;
	for (int i = 0; i < n; i++) {
		int l = nearest(iscale * (x[i] - min));
		L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
		float diff = scale * (float)L[i] + min - x[i];
		best += w[i] * (diff * diff);
	}
	uint8_t aux[32];
	for (int is = 0; is <= nstep; is++) {
		iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
		float sl = 0, sl2 = 0, sxl = 0;
		for (int i = 0; i < n; i++) {
			int l = nearest(iscale * (x[i] - min));
			l = l < 0 ? 0 : l > nmax ? nmax : l;
			aux[i] = (uint8_t)l;
			float wl = w[i] * (float)l;
			sl += wl;
			sl2 += wl * (float)l;
			sxl += wl * x[i];
		}
		float D = sum_w * sl2 - sl * sl;
		if (!(D > 0))
			continue;
		float s = (sum_w * sxl - sum_x * sl) / D, m = (sl2 * sum_x - sl * sxl) / D;
		if (m > 0) {
			m = 0;
			s = sxl / sl2;
		}
		float err = 0;
		for (int i = 0; i < n; i++) {
			float diff = s * (float)aux[i] + m - x[i];
			err += w[i] * (diff * diff);
		}
		if (err < best) {
			memcpy(L, aux, (size_t)n);
			best = err;
			scale = s;
			min = m;
		}
	}
	*neg_min = -min;
	return scale;
}

/* Q4_K (bits 4) and Q5_K (bits 5), one super-block of 256 into b: each
 * sub-block of 32 fitted by fit_affine with weights rms(sub-block) + |x|;
 * d = max scale / 63, dmin = max min / 63, the 6-bit sc and m nearest to
 * scale / d and min / dmin; then every code re-rounded against the stored
 * halves: nearest((x + dmin * m) / (d * sc)), clamped (a sub-block whose
 * d * sc is 0 keeps its fitted codes). */
static void quant_q45_k(const float *x, unsigned char *b, int bits)
{
	int nmax = (1 << bits) - 1;
	float rmin = bits == 4 ? -1.0f : -0.5f;
	int nstep = bits == 4 ? 20 : 15;
	uint8_t L[256];
	float sc[8], mn[8], w[32], max_sc = 0, max_mn = 0;
	for (int j = 0; j < 8; j++) {
		const float *xj = x + 32 * j;
		float sum2 = 0;
		for (int l = 0; l < 32; l++)
			sum2 += xj[l] * xj[l];
		float av = sqrtf(sum2 / 32);
		for (int l = 0; l < 32; l++)
			w[l] = av + fabsf(xj[l]);
		sc[j] = fit_affine(32, nmax, xj, w, L + 32 * j, &mn[j], rmin, 0.1f, nstep);
		max_sc = sc[j] > max_sc ? sc[j] : max_sc;
		max_mn = mn[j] > max_mn ? mn[j] : max_mn;
	}
	float inv_sc = max_sc > 0 ? 63.0f / max_sc : 0.0f, inv_mn = max_mn > 0 ? 63.0f / max_mn : 0.0f;
	unsigned char *s = b + 4;
	memset(s, 0, 12);
	for (int j = 0; j < 8; j++) {
		int ls = (uint8_t)nearest(inv_sc * sc[j]), lm = (uint8_t)nearest(inv_mn * mn[j]);
		ls = ls < 63 ? ls : 63;
		lm = lm < 63 ? lm : 63;
		if (j < 4) {
			s[j] = (unsigned char)ls;
			s[j + 4] = (unsigned char)lm;
		} else {
			s[j + 4] = (unsigned char)((ls & 15) | (lm & 15) << 4);
			s[j - 4] |= (unsigned char)((ls >> 4) << 6);
			s[j] |= (unsigned char)((lm >> 4) << 6);
		}
	}
	put_half(b, max_sc / 63.0f);
	put_half(b + 2, max_mn / 63.0f);
	float d = half(b), dmin = half(b + 2);
	for (int j = 0; j < 8; j++) {
		int isc, im;
		scale_min(j, s, &isc, &im);
		float dj = d * (float)isc;
		if (!dj)
			continue;
		float dm = dmin * (float)im;
		for (int l = 0; l < 32; l++) {
			int q = nearest((x[32 * j + l] + dm) / dj);
			L[32 * j + l] = (uint8_t)(q < 0 ? 0 : q > nmax ? nmax : q);
		}
	}
	/* sub-blocks 2g and 2g+1 share the 32 bytes of group g: low, high
	 * nibble; Q5_K's fifth bits: bit 2g (2g+1) of qh[l] */
	unsigned char *qh = bits == 5 ? b + 16 : NULL, *qs = qh ? b + 48 : b + 16;
	if (qh)
		memset(qh, 0, 32);
	for (int g = 0; g < 4; g++)
		for (int l = 0; l < 32; l++) {
			int lo = L[64 * g + l], hi = L[64 * g + 32 + l];
			qs[32 * g + l] = (unsigned char)((lo & 15) | (hi & 15) << 4);
			if (qh)
				qh[l] |= (unsigned char)((lo >> 4) << (2 * g) | (hi >> 4) << (2 * g + 1));
		}
}

/* The symmetric fit of Q6_K's sub-blocks (ggml's make_qx_quants with
 * weights x^2): codes L - 32 in -32..31 for scale * (L - 32) ~ x[0..16).
 * From the spacing -32 / m (m the value of largest magnitude, the first
 * on ties) and 18 more, -(32 + 0.1 * is) / m for is = -9..9 but 0, keeps
 * the least-squares scale of the one that fits best. Returns the scale
 * (0 for an all-zero sub-block, with codes 0). */
static float fit_symmetric(const float *x, uint8_t *L)
{
	float max = extreme(x, 16);
	if (fabsf(max) < 1e-15f) {
		memset(L, 0, 16);
		return 0;
	}
	float scale = 0, best = 0;
	for (int is = 0; is <= 18; is++) {
		int k = is == 0 ? 0 : is <= 9 ? is - 10 : is - 9;
		float iscale = k ? -(32 + 0.1f * (float)k) / max : -32.0f / max;
		float slx = 0, sl2 = 0;
		for (int i = 0; i < 16; i++) {
			int l = nearest(iscale * x[i]);
			l = l < -32 ? -32 : l > 31 ? 31 : l;
			float w = x[i] * x[i];
			slx += w * x[i] * (float)l;
			sl2 += w * (float)l * (float)l;
		}
		if (is == 0) {
			scale = sl2 ? slx / sl2 : 0.0f;
			best = scale * slx;
		} else if (!(sl2 > 0 && slx * slx > best * sl2)) {
			continue;
		} else {
			scale = slx / sl2;
			best = scale * slx;
		}
		for (int i = 0; i < 16; i++) {
			int l = nearest(iscale * x[i]);
			L[i] = (uint8_t)(32 + (l < -32 ? -32 : l > 31 ? 31 : l));
		}
	}
	return scale;
}

/* Q6_K, one super-block of 256 into b: each sub-block of 16 fitted by
 * fit_symmetric; with m the scale of largest magnitude, d = m / -128 and
 * the 8-bit scales nearest(-128 * scale / m) (at most 127); then every code
 * re-rounded against the stored half: nearest(x / (d * sc)) + 32, clamped
 * to 0..63 (a sub-block whose d * sc is 0 keeps its fitted codes). An
 * all-zero super-block is all zero bytes. */
static void quant_q6_k(const float *x, unsigned char *b)
{
	uint8_t L[256];
	float sc[16];
	for (int j = 0; j < 16; j++)
		sc[j] = fit_symmetric(x + 16 * j, L + 16 * j);
	float max = extreme(sc, 16);
	memset(b, 0, 210);
	if (fabsf(max) < 1e-15f)
		return;
	float iscale = -128.0f / max;
	put_half(b + 208, 1 / iscale);
	for (int j = 0; j < 16; j++) {
		int q = nearest(iscale * sc[j]);
		b[192 + j] = (unsigned char)(int8_t)(q < 127 ? q : 127);
	}
	float d = half(b + 208);
	for (int j = 0; j < 16; j++) {
		float dj = d * (float)(int8_t)b[192 + j];
		if (!dj)
			continue;
		for (int l = 0; l < 16; l++) {
			int q = nearest(x[16 * j + l] / dj);
			L[16 * j + l] = (uint8_t)(32 + (q < -32 ? -32 : q > 31 ? 31 : q));
		}
	}
	/* element e = 128 h + 32 k + l (k < 4, l < 32): low nibble in
	 * ql[64 h + 32 (k % 2) + l] (high nibble when k >= 2), top two bits
	 * at bit 2k of qh[32 h + l] (as gguf_kdecode reads them) */
	for (int e = 0; e < 256; e++) {
		int h = e / 128, k = e % 128 / 32, l = e % 32;
		b[64 * h + 32 * (k % 2) + l] |= (unsigned char)((L[e] & 15) << (4 * (k / 2)));
		b[128 + 32 * h + l] |= (unsigned char)((L[e] >> 4) << (2 * k));
	}
}

static void quant_q4_k(const float *x, unsigned char *b)
{
	quant_q45_k(x, b, 4);
}

static void quant_q5_k(const float *x, unsigned char *b)
{
	quant_q45_k(x, b, 5);
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
	case GGML_Q5_0: block = quant_q5_0; break;
	case GGML_Q5_1: block = quant_q5_1; break;
	case GGML_Q4_K: block = quant_q4_k; break;
	case GGML_Q5_K: block = quant_q5_k; break;
	case GGML_Q6_K: block = quant_q6_k; break;
	default:
		return -1;
	}
	uint64_t qk = gguf_ttype_block(t), bs = gguf_ttype_size(t);
	for (uint64_t i = 0; i < n / qk; i++)
		block(src + qk * i, d + bs * i);
	return 0;
}
