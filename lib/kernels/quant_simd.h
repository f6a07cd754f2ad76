/* quant_simd: the loops of the SIMD int8 / int4 matmul kernels, written once
 * and instantiated by quant_avx2.c and quant_avx512.c (internal to lib/).
 *
 * Both follow the canonical order of lib/kernels/quant.h exactly (16 partial sums,
 * fmaf, folded in halves), so they are bitwise equal to the scalar
 * reference. The including file defines:
 *   A                        16 float lanes (one zmm, or two ymm)
 *   azero()
 *   q8_widen(q)              the 16 codes at q as floats
 *   afma(w, x, acc)          lane j += w[j] * x[j], j < 16 (one fma each)
 *   q8_step(q, x, acc)       afma(q8_widen(q), x, acc)
 *   QUANT_TB                 tokens per pass over a block of int8 rows
 *   q4_widen(p, &lo, &hi)    the int4 block at p (32 weights) as floats:
 *                            weights 0..15 in lo, 16..31 in hi
 *   aload(f), astore(f, v)   16 floats from / to memory
 *   apin(&v)                 v stays in registers: GCC would otherwise fold
 *                            the load of v into every fma that uses it, and
 *                            load it once per token
 *   QUANT_TT4                tokens per pass over a block of int4 rows
 *   ascale(g, s, acc)        lane j: acc[j] = fma(g[j], s, acc[j])
 *   afold(acc)               the 16 lanes folded in halves (8, 4, 2, 1)
 *   QUANT_FN(name)           name with the ISA suffix
 * and includes this file once.
 *
 * Structure: four rows at a time share each x (from L1), one accumulator
 * set per row, so four independent FMA chains hide the latency; each row's
 * stream (and an int4 row's scales) is prefetched ahead as lib/kernels/prefetch.h
 * says; the rows left over go one
 * at a time through the same per-row sequence. The last cols % 16 int8
 * columns go through the same step from zero-padded copies (a zero product
 * leaves a partial sum unchanged, so the order is kept).
 */

#include "kernels/prefetch.h"

/* The lanes of the last 16-wide partial step, from zero-padded copies. */
static inline A q8_tail(const int8_t *q, const float *x, int nv, int n, A acc)
{
	if (n == nv)
		return acc;
	int8_t qt[16] = { 0 };
	float xt[16] = { 0 };
	memcpy(qt, q + nv, (size_t)(n - nv));
	memcpy(xt, x + nv, sizeof(float) * (size_t)(n - nv));
	return q8_step(qt, xt, acc);
}

/* Rows r .. r + 3 of wm for the tb tokens t .. t + tb - 1: each 16 codes of
 * a row widened once and multiplied by every token's x, so a batch pays the
 * widening once per tb tokens; per (row, token) the sums are those of the
 * single-token order. tb is a constant where this is inlined; nv: the
 * columns before the tail (none where the rows are interleaved, wm->il,
 * weights.h). */
static inline __attribute__((always_inline)) void
q8_rows4(const struct wmat *wm, int nv, int r, const float *xs, int ldx, float *ys, int ldy,
	 int t, const int tb)
{
	const int8_t *base = wm->data;
	const float *sc = wm->scales;
	int n = wm->cols, il = wm->il;
	const int8_t *q[4];
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
		q[i] = base + wmat_row_at(r + i, n, il);
	size_t ahead = prefetch_ahead(4 * (size_t)n);
	A acc[4][QUANT_TB];
	_Pragma("GCC unroll 4") for (int j = 0; j < tb; j++)
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
		acc[i][j] = azero();
	for (int c = 0; c < nv; c += 16) {
		size_t o = il ? wmat_il_col(c) : (size_t)c;
		if (!il && (c & 63) == 0)
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
				prefetch_at(q[i] + o, ahead);
		A w[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
			w[i] = q8_widen(q[i] + o);
		_Pragma("GCC unroll 4") for (int j = 0; j < tb; j++) {
			const float *x = xs + (size_t)(t + j) * ldx + c;
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
				acc[i][j] = afma(w[i], x, acc[i][j]);
		}
	}
	_Pragma("GCC unroll 4") for (int j = 0; j < tb; j++) {
		const float *x = xs + (size_t)(t + j) * ldx;
		float *y = ys + (size_t)(t + j) * ldy;
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
			y[r + i] = afold(q8_tail(q[i], x, nv, n, acc[i][j])) * sc[r + i];
	}
}

/* Rows [r0, r1) of an int8 matrix with a scale per row. */
static inline __attribute__((always_inline)) void
q8_matmul(const struct wmat *w, float *ys, int ldy, int r0, int r1, const float *xs, int ldx,
	  int T)
{
	int n = w->cols, nv = n / 16 * 16, il = w->il;
	const int8_t *base = w->data;
	const float *sc = w->scales;
	int r = r0;
	for (; r + 4 <= r1; r += 4) {
		int t = 0;
		for (; t + QUANT_TB <= T; t += QUANT_TB)
			q8_rows4(w, nv, r, xs, ldx, ys, ldy, t, QUANT_TB);
		for (; t < T; t++)
			q8_rows4(w, nv, r, xs, ldx, ys, ldy, t, 1);
	}
	for (; r < r1; r++) {
		const int8_t *q0 = base + wmat_row_at(r, n, il);
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			A a0 = azero();
			for (int c = 0; c < nv; c += 16)
				a0 = q8_step(q0 + (il ? wmat_il_col(c) : (size_t)c), x + c, a0);
			ys[(size_t)t * ldy + r] = afold(q8_tail(q0, x, nv, n, a0)) * sc[r];
		}
	}
}

/* ---- group-scaled codes: int4, and int8 in groups (GGUF's Q8_0) ----
 *
 * One set of loops for both, in int4's order (quant.h): q8 (a constant
 * where these are inlined) says whether the codes are int8, one byte a
 * weight, or int4, half a byte. */

/* Bytes of codes of an n-weight row. */
static inline size_t grp_row_bytes(int n, const int q8)
{
	return q8 ? (size_t)n : (size_t)n / 2;
}

/* The 32 codes of block c (a multiple of Q4_BLOCK) of the row at p as
 * floats: weights c .. c + 15 in lo, c + 16 .. c + 31 in hi. */
static inline __attribute__((always_inline)) void
grp_widen(const uint8_t *p, int c, A *lo, A *hi, const int q8)
{
	if (q8) {
		*lo = q8_widen((const int8_t *)p + c);
		*hi = q8_widen((const int8_t *)p + c + 16);
	} else {
		q4_widen(p + c / 2, lo, hi);
	}
}

/* Block c of the row at p against x[c .. c + 32). */
static inline __attribute__((always_inline)) A
grp_step(const uint8_t *p, int c, const float *x, A acc, const int q8)
{
	A lo, hi;
	grp_widen(p, c, &lo, &hi, q8);
	return afma(hi, x + c + 16, afma(lo, x + c, acc));
}

/* Rows r .. r + 3 for token t (decode): the codes widened in registers
 * straight from the stream. */
static inline __attribute__((always_inline)) void
grp_rows4(const struct wmat *w, int r, const float *x, float *ys, int ldy, int t,
	  const int q8)
{
	int n = w->cols, G = w->group_size, ng = n / G;
	size_t rb = grp_row_bytes(n, q8);
	const uint8_t *q[4];
	const float *s[4];
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
		q[i] = (const uint8_t *)w->data + (size_t)(r + i) * rb;
		s[i] = w->scales + (size_t)(r + i) * ng;
	}
	size_t ahead = prefetch_ahead(4 * rb);
	size_t sahead = prefetch_ahead(4 * sizeof(float) * (size_t)ng);
	A acc[4];
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
		acc[i] = azero();
	for (int g = 0; g < ng; g++) {
		if (g % 16 == 0)
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
				prefetch_at(s[i] + g, sahead);
		A gs[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
			gs[i] = azero();
		for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK) {
			size_t o = q8 ? (size_t)c : (size_t)c / 2;
			if ((o & 63) == 0)
				_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
					prefetch_at(q[i] + o, ahead);
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
				gs[i] = grp_step(q[i], c, x, gs[i], q8);
		}
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
			acc[i] = ascale(gs[i], s[i][g], acc[i]);
	}
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
		ys[(size_t)t * ldy + r + i] = afold(acc[i]);
}

/* Rows r .. r + 3's codes as floats into f (row i at f + i * cols): widened
 * once for all the tokens of a batch. */
static inline __attribute__((always_inline)) void
grp_codes4(const struct wmat *w, int r, float *f, const int q8)
{
	int n = w->cols;
	for (int i = 0; i < 4; i++) {
		const uint8_t *q = (const uint8_t *)w->data + (size_t)(r + i) * grp_row_bytes(n, q8);
		for (int c = 0; c < n; c += Q4_BLOCK) {
			A lo, hi;
			grp_widen(q, c, &lo, &hi, q8);
			astore(f + (size_t)i * n + c, lo);
			astore(f + (size_t)i * n + c + 16, hi);
		}
	}
}

/* Rows r .. r + 3 for the tt tokens t .. t + tt - 1 (a constant where this
 * is inlined, at most QUANT_TT4) from their codes as floats f: each 16
 * codes loaded once for tt tokens, each x once for the four rows, the
 * order per (row, token) that of grp_rows4. */
static inline __attribute__((always_inline)) void
grp_tile4(const struct wmat *w, const float *f, int r, const float *xs, int ldx,
	  float *ys, int ldy, int t, const int tt)
{
	int n = w->cols, G = w->group_size, ng = n / G;
	const float *s[4];
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
		s[i] = w->scales + (size_t)(r + i) * ng;
	A acc[4][QUANT_TT4];
	_Pragma("GCC unroll 4") for (int j = 0; j < tt; j++)
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
		acc[i][j] = azero();
	for (int g = 0; g < ng; g++) {
		A gs[4][QUANT_TT4];
		_Pragma("GCC unroll 4") for (int j = 0; j < tt; j++)
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
			gs[i][j] = azero();
		for (int c = g * G; c < (g + 1) * G; c += 16) {
			A wv[4];
			_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
				wv[i] = aload(f + (size_t)i * n + c);
				apin(&wv[i]);
			}
			_Pragma("GCC unroll 4") for (int j = 0; j < tt; j++) {
				const float *x = xs + (size_t)(t + j) * ldx + c;
				_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
					gs[i][j] = afma(wv[i], x, gs[i][j]);
			}
		}
		_Pragma("GCC unroll 4") for (int j = 0; j < tt; j++)
		_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
			acc[i][j] = ascale(gs[i][j], s[i][g], acc[i][j]);
	}
	_Pragma("GCC unroll 4") for (int j = 0; j < tt; j++)
	_Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
		ys[(size_t)(t + j) * ldy + r + i] = afold(acc[i][j]);
}

static inline __attribute__((always_inline)) void
grp_matmul(const struct wmat *w, float *ys, int ldy, int r0, int r1, const float *xs,
	   int ldx, int T, const int q8)
{
	int n = w->cols, G = w->group_size, ng = n / G;
	size_t rb = grp_row_bytes(n, q8);
	const uint8_t *base = w->data;
	int r = r0;
	/* A batch widens each block of four rows once into f (on the stack:
	 * 16 bytes a column) and runs every token through it. */
	float f[T > 1 ? 4 * n : 1];
	for (; r + 4 <= r1; r += 4) {
		if (T == 1) {
			grp_rows4(w, r, xs, ys, ldy, 0, q8);
			continue;
		}
		grp_codes4(w, r, f, q8);
		int t = 0;
		for (; t + QUANT_TT4 <= T; t += QUANT_TT4)
			grp_tile4(w, f, r, xs, ldx, ys, ldy, t, QUANT_TT4);
		for (; t < T; t++)
			grp_tile4(w, f, r, xs, ldx, ys, ldy, t, 1);
	}
	for (; r < r1; r++) {
		const uint8_t *q0 = base + (size_t)r * rb;
		const float *s0 = w->scales + (size_t)r * ng;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			A a0 = azero();
			for (int g = 0; g < ng; g++) {
				A g0 = azero();
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK)
					g0 = grp_step(q0, c, x, g0, q8);
				a0 = ascale(g0, s0[g], a0);
			}
			ys[(size_t)t * ldy + r] = afold(a0);
		}
	}
}

/* The table's entries (quant_isa.h): int8 with either kind of scales, and
 * int4. */
void QUANT_FN(q8_mm)(const struct kern_mm *m)
{
	if (wmat_grouped(m->w))
		grp_matmul(m->w, m->y, m->ldy, m->r0, m->r1, m->x, m->ldx, m->T, 1);
	else
		q8_matmul(m->w, m->y, m->ldy, m->r0, m->r1, m->x, m->ldx, m->T);
}

void QUANT_FN(q4_mm)(const struct kern_mm *m)
{
	grp_matmul(m->w, m->y, m->ldy, m->r0, m->r1, m->x, m->ldx, m->T, 0);
}
