/* quant_vnni: the int8-activation kernels (AVX-512 VNNI, vpdpbusd).
 *
 * The activations were quantized in blocks of Q8A_BLOCK = 32 (lib/kernels/quant.h);
 * a 64-byte chunk of weights covers two blocks, whose integer sums land in
 * lanes 0-7 and 8-15 of the vpdpbusd result, so one float vector of the two
 * blocks' scales turns the chunk into floats. vpdpbusd multiplies unsigned by
 * signed bytes:
 *   int8 weights: |x| (unsigned) times the weight with x's sign moved onto
 *                 it, which gives exactly sum(w x);
 *   int4 weights: the stored nibble u = q + 8 (unsigned) times x, minus
 *                 8 * sum(x), which gives exactly sum(q x).
 * int4 and int8 in groups (GGUF's Q8_0) multiply each block's sum by the
 * activation scale times the group's scale; int8 with a scale per row by
 * the activation scale, and the row's scale at the end. `q4` (int4 codes)
 * and `grp` (scales per group) are constants where the loops are inlined;
 * `il` (int8 rows interleaved, weights.h) is not, so as not to double the
 * code for a few integer operations a step.
 * Up to four rows share each chunk's activation work; each row's weights are
 * prefetched ahead as lib/kernels/prefetch.h says. The full 64-column chunks go
 * without masks or branches (struct full); only the last partial chunk of a
 * row takes the masked path (struct chunk). */
#include "kernels/quant_isa.h"
#include "kernels/prefetch.h"

#include <immintrin.h>

/* What a 64-column chunk of activations contributes, shared by the rows. */
struct full {
	__m512i xq;      /* the codes */
	__m512i ax;      /* |codes| (int8 weights) */
	__mmask64 neg;   /* codes < 0 (int8 weights) */
	__m512i nxsum8;  /* -8 * (sum of each 4 codes) (int4 weights) */
	__m512 xs;       /* block scales: lanes 0-7 first block, 8-15 second */
};

/* The last chunk of a row, when the row's length is not a multiple of 64:
 * the same, from masked loads (the codes beyond n read as zero). */
struct chunk {
	struct full f;
	__mmask64 m;     /* the columns that exist */
	int two;         /* whether the second block exists */
};

/* Lanes 0-7 = p[0], lanes 8-15 = p[1]: one load and one shuffle. */
static inline __m512 two_scales(const float *p)
{
	const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0,
					      1, 1, 1, 1, 1, 1, 1, 1);
	return _mm512_permutexvar_ps(idx, _mm512_maskz_loadu_ps(0x3, p));
}

/* The parts of k that follow from its codes k->xq. */
static inline __attribute__((always_inline)) void
from_codes(struct full *k, const int q4)
{
	if (q4) {
		__m512i s4 = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
						 _mm512_set1_epi8(1), k->xq);
		k->nxsum8 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(s4, 3));
	} else {
		k->ax = _mm512_abs_epi8(k->xq);
		k->neg = _mm512_movepi8_mask(k->xq);
	}
}

static inline __attribute__((always_inline)) void
full_load(struct full *k, const struct q8act *a, int c, const int q4)
{
	k->xq = _mm512_loadu_si512(a->q + c);
	from_codes(k, q4);
	k->xs = two_scales(a->scales + c / Q8A_BLOCK);
}

static inline __attribute__((always_inline)) void
chunk_load(struct chunk *k, const struct q8act *a, int c, int n, const int q4)
{
	int left = n - c;
	k->m = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
	k->f.xq = _mm512_maskz_loadu_epi8(k->m, a->q + c);
	from_codes(&k->f, q4);
	k->two = left > Q8A_BLOCK;
	float s1 = k->two ? a->scales[c / Q8A_BLOCK + 1] : 0.0f;
	k->f.xs = _mm512_insertf32x8(_mm512_set1_ps(a->scales[c / Q8A_BLOCK]),
				     _mm256_set1_ps(s1), 1);
}

/* The 64 weights wv of an int8 row against the chunk k: |x| (unsigned)
 * times the weight with x's sign moved onto it. */
static inline __m512 q8_dot(__m512i wv, const struct full *k, __m512 sc, __m512 acc)
{
	wv = _mm512_mask_sub_epi8(wv, k->neg, _mm512_setzero_si512(), wv);
	__m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), k->ax, wv);
	return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sc, acc);
}

/* The 64 weights of an int4 row (the 32 bytes b) as unsigned bytes u = q + 8
 * in column order: the bytes go to [b0 b0 b1 b1] (16-byte lanes), the odd
 * lanes shifted down a nibble, every byte masked to its nibble:
 * [lo0 hi0 lo1 hi1], each block in column order, in three operations. */
static inline __m512i q4_nibbles(__m256i b)
{
	__m512i z = _mm512_castsi256_si512(b);
	__m512i u = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(1, 1, 0, 0));
	u = _mm512_mask_srli_epi16(u, 0xff00ff00u, u, 4);
	return _mm512_and_si512(u, _mm512_set1_epi8(15));
}

/* Those weights against the chunk k, ws their two blocks' group scales; the
 * -8 sum(x) correction is the accumulator vpdpbusd starts from. */
static inline __m512 q4_dot(__m256i b, const struct full *k, __m512 ws, __m512 acc)
{
	__m512i d = _mm512_dpbusd_epi32(k->nxsum8, q4_nibbles(b), k->xq);
	return _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(k->xs, ws), acc);
}

/* The group scales of columns c .. c + 63 of one row (s: the row's). */
static inline __m512 q4_scales(const float *s, int c, int G)
{
	int g0 = c / G, g1 = (c + Q8A_BLOCK) / G;
	return g1 == g0 ? _mm512_set1_ps(s[g0]) : two_scales(s + g0);
}

/* Rows r .. r + R - 1 (R a constant where this is inlined): the full chunks
 * without masks, then the last partial chunk through chunk_load, in column
 * order, so the sums are those of the order in lib/kernels/quant.h. */
static inline __attribute__((always_inline)) void
rows(const struct wmat *w, const struct q8act *a, float *y, int r, size_t ahead,
     size_t sahead, const int q4, const int grp, int il, const int R)
{
	int n = w->cols, G = grp ? w->group_size : 1, ng = n / G;
	const uint8_t *p[4];
	const float *s[4];
	__m512 acc[4];
	_Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
		p[i] = (const uint8_t *)w->data + (q4 ? (size_t)(r + i) * (size_t)n / 2
						      : wmat_row_at(r + i, n, il));
		s[i] = w->scales + (size_t)(r + i) * ng;
		acc[i] = _mm512_setzero_ps();
	}
	int c = 0;
	for (; c + 64 <= n; c += 64) {
		struct full k;
		full_load(&k, a, c, q4);
		size_t o = q4 ? (size_t)c / 2 : il ? wmat_il_col(c) : (size_t)c;
		_Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
			if (grp && c % (16 * G) == 0)
				prefetch_at(s[i] + c / G, sahead);
			if (!q4) {
				prefetch_at(p[i] + o, ahead);
				acc[i] = q8_dot(_mm512_loadu_si512(p[i] + o), &k,
						grp ? _mm512_mul_ps(k.xs, q4_scales(s[i], c, G)) : k.xs,
						acc[i]);
				continue;
			}
			if (o % 64 == 0)
				prefetch_at(p[i] + o, ahead);
			acc[i] = q4_dot(_mm256_loadu_si256((const __m256i *)(p[i] + o)), &k,
					q4_scales(s[i], c, G), acc[i]);
		}
	}
	if (c < n) {
		struct chunk k;
		chunk_load(&k, a, c, n, q4);
		int g0 = c / G, g1 = (c + Q8A_BLOCK) / G;
		_Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
			const uint8_t *pc = p[i] + (q4 ? c / 2 : c);
			__m512 ws = grp ? _mm512_insertf32x8(_mm512_set1_ps(s[i][g0]),
							     _mm256_set1_ps(k.two ? s[i][g1] : 0.0f), 1)
					: _mm512_set1_ps(1.0f);
			if (!q4) {
				acc[i] = q8_dot(_mm512_maskz_loadu_epi8(k.m, pc), &k.f,
						grp ? _mm512_mul_ps(k.f.xs, ws) : k.f.xs, acc[i]);
				continue;
			}
			__m256i b = _mm256_maskz_loadu_epi8(k.two ? 0xffffffffu : 0xffffu, pc);
			acc[i] = q4_dot(b, &k.f, ws, acc[i]);
		}
	}
	_Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
		y[r + i] = quant_fold8(_mm256_add_ps(_mm512_castps512_ps256(acc[i]),
						     _mm512_extractf32x8_ps(acc[i], 1))) *
			   (grp ? 1.0f : w->scales[r + i]);
}

/* Blocks of four rows, then the rest one at a time; each kind of weights
 * gets its own inlined copy. */
static inline __attribute__((always_inline)) void
matvec(const struct wmat *w, const struct q8act *a, float *y, int r0, int r1, const int q4,
       const int grp, int il)
{
	size_t rb = q4 ? (size_t)w->cols / 2 : (size_t)w->cols;
	size_t ahead = prefetch_ahead(4 * rb);
	size_t sahead = grp ? prefetch_ahead(4 * sizeof(float) * (size_t)(w->cols / w->group_size)) : 0;
	int r = r0;
	for (; r + 4 <= r1; r += 4)
		rows(w, a, y, r, ahead, sahead, q4, grp, il, 4);
	for (; r < r1; r++)
		rows(w, a, y, r, ahead, sahead, q4, grp, il, 1);
}

void matvec_q8a_vnni(const struct wmat *w, const struct q8act *a, float *y,
		     int r0, int r1)
{
	if (w->type == WT_Q4)
		matvec(w, a, y, r0, r1, 1, 1, 0);
	else if (wmat_grouped(w))
		matvec(w, a, y, r0, r1, 0, 1, 0);
	else
		matvec(w, a, y, r0, r1, 0, 0, w->il);
}

/* ---- several tokens at once (prefill) ----
 *
 * A tile of R rows times TT tokens: the R x TT sums stay in registers while
 * each 64-column chunk of the rows is multiplied by the TT tokens' codes.
 * Both weight types go in as unsigned bytes, with the correction that makes
 * the integer sum exact as the accumulator vpdpbusd starts from: int4 the
 * nibble u = q + 8 and -8 sum(x), int8 u = w + 128 (w with its top bit
 * flipped) and -128 sum(x). Rows go in panels of about PANEL_BYTES of
 * prepared chunks (struct wchunk: the unsigned bytes, and the group scales
 * as a vector), made once per panel, so that the unpacking is paid once
 * for all T tokens, not once per tile. Each token's corrections and block
 * scales are worked out once per panel too (struct tok). Each (row, token)
 * then gets the integer sums, the scale products and the fmas of matvec's
 * order, in column order, so the bits are those of lib/kernels/quant.h
 * whatever T. */

#define PANEL_BYTES (192 * 1024)

/* One row's part of one chunk, shared by every token. */
struct wchunk {
	__m512i u;       /* the weights as unsigned bytes (0 beyond n) */
	__m512 ws;       /* grp: the group scales of its two blocks (0 for a
			  * missing second block) */
};

/* One token's part of one chunk, shared by every row. */
struct tok {
	__m512i corr;    /* -8 or -128 times the sum of each 4 codes */
	__m512 xs;       /* block scales: lanes 0-7 first block, 8-15 second */
};

/* Row r's chunk at column c; the last chunk of a row reads its weights
 * masked. */
static inline __attribute__((always_inline)) struct wchunk
wchunk_make(const struct wmat *w, int r, int c, const int q4, const int grp, int il)
{
	struct wchunk k;
	int n = w->cols, G = grp ? w->group_size : 1, ng = n / G;
	int left = n - c, two = left > Q8A_BLOCK;
	const uint8_t *p = (const uint8_t *)w->data +
			   (q4 ? (size_t)r * (size_t)n / 2 + (size_t)c / 2
			       : wmat_row_at(r, n, il) + (il ? wmat_il_col(c) : (size_t)c));
	if (q4) {
		__m256i b = left >= 64 ? _mm256_loadu_si256((const __m256i *)p)
			: _mm256_maskz_loadu_epi8(two ? 0xffffffffu : 0xffffu, p);
		k.u = q4_nibbles(b);
	} else {
		__m512i v = left >= 64 ? _mm512_loadu_si512(p)
			: _mm512_maskz_loadu_epi8(((__mmask64)1 << left) - 1, p);
		k.u = _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80));
	}
	k.ws = _mm512_setzero_ps();
	if (grp) {
		const float *s = w->scales + (size_t)r * ng;
		int g0 = c / G, g1 = (c + Q8A_BLOCK) / G;
		k.ws = left >= 64 ? q4_scales(s, c, G)
			: _mm512_insertf32x8(_mm512_set1_ps(s[g0]),
					     _mm256_set1_ps(two ? s[g1] : 0.0f), 1);
	}
	return k;
}

/* Token a's part of the chunk at column c; the last chunk of a row reads
 * its codes masked (beyond n they are zero, so they add nothing whatever
 * the weights there) and a missing second block's scale is 0. */
static inline __attribute__((always_inline)) struct tok
tok_make(const struct q8act *a, int c, int n, const int q4)
{
	struct tok k;
	int left = n - c;
	__m512i xq;
	if (left >= 64) {
		xq = _mm512_loadu_si512(a->q + c);
		k.xs = two_scales(a->scales + c / Q8A_BLOCK);
	} else {
		xq = _mm512_maskz_loadu_epi8(((__mmask64)1 << left) - 1, a->q + c);
		float s1 = left > Q8A_BLOCK ? a->scales[c / Q8A_BLOCK + 1] : 0.0f;
		k.xs = _mm512_insertf32x8(_mm512_set1_ps(a->scales[c / Q8A_BLOCK]),
					  _mm256_set1_ps(s1), 1);
	}
	__m512i sx = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
					 _mm512_set1_epi8((char)(q4 ? 8 : 128)), xq);
	k.corr = _mm512_sub_epi32(_mm512_setzero_si512(), sx);
	return k;
}

/* Rows r .. r + R - 1 (their chunks at wk, nc per row) times tokens t ..
 * t + TT - 1 (R, TT <= 4, constants where this is inlined); tk[j * nc + k]:
 * token t + j's part of chunk k. The last chunk of a row reads the
 * tokens' codes masked: they are padded only to Q8A_BLOCK, so a whole
 * 64-byte load could pass the end of the buffer. */
static inline __attribute__((always_inline)) void
tile(const struct wmat *w, const struct q8act *a, const struct tok *tk,
     const struct wchunk *wk, int nc, float *y, int ldy, int r, int t, const int grp,
     const int R, const int TT)
{
	int n = w->cols;
	__m512 acc[4][4];
	_Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
	_Pragma("GCC unroll 4") for (int j = 0; j < TT; j++)
		acc[i][j] = _mm512_setzero_ps();
	for (int c = 0; c < nc; c++) {
		__m512i u[4];
		__m512 ws[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
			u[i] = wk[(size_t)i * nc + c].u;
			ws[i] = wk[(size_t)i * nc + c].ws;
		}
		_Pragma("GCC unroll 4") for (int j = 0; j < TT; j++) {
			const struct tok *k = &tk[j * nc + c];
			int left = n - 64 * c;
			__m512i xq = left >= 64 ? _mm512_loadu_si512(a[t + j].q + 64 * c)
				: _mm512_maskz_loadu_epi8(((__mmask64)1 << left) - 1,
							  a[t + j].q + 64 * c);
			_Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
				__m512i d = _mm512_dpbusd_epi32(k->corr, u[i], xq);
				__m512 sc = grp ? _mm512_mul_ps(k->xs, ws[i]) : k->xs;
				acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sc, acc[i][j]);
			}
		}
	}
	_Pragma("GCC unroll 4") for (int j = 0; j < TT; j++)
	_Pragma("GCC unroll 4") for (int i = 0; i < R; i++)
		y[(size_t)(t + j) * ldy + r + i] =
			quant_fold8(_mm256_add_ps(_mm512_castps512_ps256(acc[i][j]),
						  _mm512_extractf32x8_ps(acc[i][j], 1))) *
			(grp ? 1.0f : w->scales[r + i]);
}

/* Panels of about PANEL_BYTES of prepared chunks; in each, four tokens at
 * a time (then the rest one at a time) through the panel's blocks of four
 * rows (then its rows left over one at a time). */
static inline __attribute__((always_inline)) void
matmul(const struct wmat *w, float *y, int ldy, int r0, int r1, const struct q8act *a,
       int T, const int q4, const int grp, int il)
{
	int n = w->cols, nc = (n + 63) / 64;
	int panel = (int)(PANEL_BYTES / (sizeof(struct wchunk) * (size_t)nc)) / 4 * 4;
	panel = panel < 4 ? 4 : panel;
	struct tok tk[4 * nc];
	struct wchunk wk[(size_t)panel * nc];
	for (int p0 = r0; p0 < r1; p0 += panel) {
		int p1 = r1 - p0 < panel ? r1 : p0 + panel;
		for (int r = p0; r < p1; r++)
			for (int k = 0; k < nc; k++)
				wk[(size_t)(r - p0) * nc + k] = wchunk_make(w, r, 64 * k, q4, grp, il);
		for (int t = 0; t < T; t += 4) {
			int tt = T - t < 4 ? T - t : 4;
			for (int j = 0; j < tt; j++)
				for (int k = 0; k < nc; k++)
					tk[j * nc + k] = tok_make(&a[t + j], 64 * k, n, q4);
			int r = p0;
			for (; r + 4 <= p1; r += 4) {
				const struct wchunk *wr = wk + (size_t)(r - p0) * nc;
				if (tt == 4) {
					tile(w, a, tk, wr, nc, y, ldy, r, t, grp, 4, 4);
					continue;
				}
				for (int j = 0; j < tt; j++)
					tile(w, a, tk + j * nc, wr, nc, y, ldy, r, t + j, grp, 4, 1);
			}
			for (; r < p1; r++) {
				const struct wchunk *wr = wk + (size_t)(r - p0) * nc;
				if (tt == 4) {
					tile(w, a, tk, wr, nc, y, ldy, r, t, grp, 1, 4);
					continue;
				}
				for (int j = 0; j < tt; j++)
					tile(w, a, tk + j * nc, wr, nc, y, ldy, r, t + j, grp, 1, 1);
			}
		}
	}
}

void matmul_q8a_vnni(const struct wmat *w, float *y, int ldy, int r0, int r1,
		     const struct q8act *a, int T)
{
	if (w->type == WT_Q4)
		matmul(w, y, ldy, r0, r1, a, T, 1, 1, 0);
	else if (wmat_grouped(w))
		matmul(w, y, ldy, r0, r1, a, T, 0, 1, 0);
	else
		matmul(w, y, ldy, r0, r1, a, T, 0, 0, w->il);
}

/* ---- quantizing the activations ---- */

/* q8a_quantize_scalar's bits, a block of 32 at a time: the same float
 * division for the scale and for each x / scale, and roundf's half away
 * from zero as truncation plus one step away from zero where the (exact)
 * remainder is at least one half. */
void q8a_quantize_avx512(const float *x, int n, struct q8act *a)
{
	int np = q8a_padded(n);
	a->n = n;
	const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
	const __m512 lim = _mm512_set1_ps(127.0f);
	const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
	for (int b = 0; b < np; b += Q8A_BLOCK) {
		int left = n - b;
		__mmask16 m0 = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
		__mmask16 m1 = left >= 32 ? 0xffff : left <= 16 ? 0
			: (__mmask16)((1u << (left - 16)) - 1);
		__m512 v[2] = { _mm512_maskz_loadu_ps(m0, x + b),
				_mm512_maskz_loadu_ps(m1, x + b + 16) };
		__m512 amax = _mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1]));
		float s = _mm512_reduce_max_ps(amax) / 127.0f;
		a->scales[b / Q8A_BLOCK] = s;
		__m512 vs = _mm512_set1_ps(s);
		for (int h = 0; h < 2; h++) {
			__m128i q = _mm_setzero_si128();
			if (s != 0) {
				__m512 d = _mm512_div_ps(v[h], vs);
				__m512 t = _mm512_roundscale_ps(d, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
				__m512 f = _mm512_abs_ps(_mm512_sub_ps(d, t));
				__mmask16 up = _mm512_cmp_ps_mask(f, half, _CMP_GE_OQ);
				__m512 step = _mm512_castsi512_ps(_mm512_or_si512(
					_mm512_castps_si512(one),
					_mm512_and_si512(_mm512_castps_si512(d), sign)));
				t = _mm512_mask_add_ps(t, up, t, step);
				t = _mm512_min_ps(_mm512_max_ps(t, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
				q = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(t));
			}
			_mm_storeu_si128((__m128i *)(a->q + b + 16 * h), q);
		}
	}
}
