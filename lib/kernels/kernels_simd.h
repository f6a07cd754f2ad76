/* kernels_simd: the vector kernels other than the matrix products
 * (attention's scores and values, rmsnorm, exp, softmax, rope, silu_mul),
 * written once on 16 float
 * lanes and instantiated by kernels_avx2.c and kernels_avx512.c (internal
 * to lib/kernels).
 *
 * A vector V holds the 16 canonical lanes of kernels.h: lane j is partial
 * sum s[j], and element i of a row goes into lane i % 16. A tail of n < 16
 * elements is read zero-filled and only its n lanes are kept or stored, so
 * every lane sees exactly the operations of the scalar reference, in its
 * order, and the results are bitwise those of kernels.c. The including file
 * defines, each always inlined:
 *   V                    16 float lanes (one zmm, or two ymm)
 *   v_zero(), v_set1(f)
 *   v_load(p)            p[0..16)
 *   v_loadn(p, n)        p[0..n), lanes n..15 zero (1 <= n <= 16)
 *   v_store(p, v), v_storen(p, v, n)
 *   v_keep(old, new, n)  lanes < n from new, the others from old (n < 16)
 *   v_add, v_sub, v_mul, v_div, v_min, v_max, v_fma(a, b, c) (a * b + c,
 *                        one rounding), v_neg (sign flipped)
 *   v_rint(v)            to the nearest integer, ties to even (nearbyintf)
 *   v_pow2i(n)           2^n for integral n in the normal range
 *   v_fold(v)            the fold of kern_sum16 (w = 8, 4, 2, 1)
 *   v_hmax(v)            the largest lane
 *   KS_ATT_GROUP         the most query heads one attention call takes
 *                        (att_group, kernels.h): 4 or ATT_MAXQ = 8, as its
 *                        registers hold 2 x KS_ATT_GROUP accumulators
 * and, where it can fold eight vectors at once, defines KS_FOLD8 and
 *   v_fold8(out, a, f)   out[j] = v_fold(a[j]) * f for j < 8
 * It includes this file once; ks_kernels is then its level's table of
 * these kernels, which kernels_for completes.
 */

#include <xmmintrin.h>

#define KS_AI static inline __attribute__((always_inline))

/* How far ahead attention asks for the cached rows it streams: a head's
 * keys and values are each one sequential stream (forward.h), which the
 * hardware prefetchers follow too slowly alone at thousands of positions
 * (docs/performance.md, "Attention at depth"). */
#define ATT_AHEAD 4096

/* The 16 lanes of a row from i on: whole, or the zero-filled tail. */
KS_AI V ks_load(const float *p, int left)
{
	return left >= 16 ? v_load(p) : v_loadn(p, left);
}

KS_AI void ks_store(float *p, V v, int left)
{
	if (left >= 16)
		v_store(p, v);
	else
		v_storen(p, v, left);
}

KS_AI V ks_keep(V old, V new, int left)
{
	return left >= 16 ? new : v_keep(old, new, left);
}

KS_AI float dot(const float *a, const float *b, int n)
{
	V acc = v_zero();
	int i = 0;
	for (; i + 16 <= n; i += 16)
		acc = v_fma(v_load(a + i), v_load(b + i), acc);
	if (i < n)
		acc = v_keep(acc, v_fma(v_loadn(a + i, n - i), v_loadn(b + i, n - i), acc),
			     n - i);
	return v_fold(acc);
}

/* Asks for each cache line of `rows` cached rows of n floats, ld apart,
 * ATT_AHEAD bytes ahead (a prefetch never faults, past the end either). */
KS_AI void att_ask(const float *r, int rows, size_t ld, int n)
{
	for (int j = 0; j < rows; j++)
		for (int c = 0; c < n; c += 16)
			_mm_prefetch((const char *)(r + (size_t)j * ld + (size_t)c) + ATT_AHEAD,
				     _MM_HINT_T0);
}

/* NQ (a constant where this is inlined) heads' scores over every
 * position. Where the level folds eight vectors at once (KS_FOLD8) and the
 * rows are whole 16-column steps, eight positions at a time, head by head,
 * their eight key rows read from L1 for every head after the first: the
 * fold, not the products, was the cost. Then position by position: each
 * key row's 16-column steps loaded once for all NQ queries, whose partial
 * sums are independent chains. The same bits either way. */
KS_AI void att_scores_q(float *s, int lds, const float *q, const float *k, int ldk, int np,
			int n, float scale, const int NQ)
{
	int p = 0;
#ifdef KS_FOLD8
	if (n % 16 == 0)
		for (; p + 8 <= np; p += 8) {
			const float *kp = k + (size_t)p * (size_t)ldk;
			att_ask(kp, 8, (size_t)ldk, n);
			for (int h = 0; h < NQ; h++) {
				V acc[8];
				_Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
					acc[j] = v_zero();
				for (int i = 0; i < n; i += 16) {
					V qv = v_load(q + (size_t)h * (size_t)n + i);
					_Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
						acc[j] = v_fma(qv, v_load(kp + (size_t)j * (size_t)ldk + i),
							       acc[j]);
				}
				v_fold8(s + (size_t)h * (size_t)lds + (size_t)p, acc, scale);
			}
		}
#endif
	for (; p < np; p++) {
		const float *kp = k + (size_t)p * (size_t)ldk;
		att_ask(kp, 1, (size_t)ldk, n);
		V acc[ATT_MAXQ];
		_Pragma("GCC unroll 8") for (int h = 0; h < NQ; h++)
			acc[h] = v_zero();
		int i = 0;
		for (; i + 16 <= n; i += 16) {
			V kv = v_load(kp + i);
			_Pragma("GCC unroll 8") for (int h = 0; h < NQ; h++)
				acc[h] = v_fma(v_load(q + (size_t)h * (size_t)n + i), kv, acc[h]);
		}
		if (i < n) {
			V kv = v_loadn(kp + i, n - i);
			_Pragma("GCC unroll 8") for (int h = 0; h < NQ; h++)
				acc[h] = v_keep(acc[h], v_fma(v_loadn(q + (size_t)h * (size_t)n + i,
								      n - i), kv, acc[h]), n - i);
		}
		_Pragma("GCC unroll 8") for (int h = 0; h < NQ; h++)
			s[(size_t)h * (size_t)lds + (size_t)p] = v_fold(acc[h]) * scale;
	}
}

static void att_scores(float *s, int lds, const float *q, int nq, const float *k, int ldk,
		       int np, int n, float scale)
{
	switch (nq) {
#if KS_ATT_GROUP > 4
	case 8: att_scores_q(s, lds, q, k, ldk, np, n, scale, 8); return;
	case 7: att_scores_q(s, lds, q, k, ldk, np, n, scale, 7); return;
	case 6: att_scores_q(s, lds, q, k, ldk, np, n, scale, 6); return;
	case 5: att_scores_q(s, lds, q, k, ldk, np, n, scale, 5); return;
#endif
	case 4: att_scores_q(s, lds, q, k, ldk, np, n, scale, 4); return;
	case 3: att_scores_q(s, lds, q, k, ldk, np, n, scale, 3); return;
	case 2: att_scores_q(s, lds, q, k, ldk, np, n, scale, 2); return;
	default: att_scores_q(s, lds, q, k, ldk, np, n, scale, 1); return;
	}
}

/* NQ heads' sums, 32 columns at a time held in registers (2 x NQ
 * accumulators) across every position, each value row's step loaded once
 * for all NQ; the first pass asks for the whole rows ahead, which the
 * later ones find in cache. */
KS_AI void att_values_q(float *y, const float *s, int lds, const float *v, int ldv, int np,
			int n, const int NQ)
{
	for (int i = 0; i < n; i += 32) {
		V acc[ATT_MAXQ][2];
		_Pragma("GCC unroll 8") for (int h = 0; h < NQ; h++)
			_Pragma("GCC unroll 2") for (int c = 0; c < 2; c++)
				acc[h][c] = i + 16 * c < n ? ks_load(y + (size_t)h * (size_t)n + i +
								     16 * c, n - i - 16 * c)
							   : v_zero();
		for (int p = 0; p < np; p++) {
			const float *vp = v + (size_t)p * (size_t)ldv + i;
			if (i == 0)
				att_ask(vp, 1, (size_t)ldv, n);
			V x0 = ks_load(vp, n - i), x1 = i + 16 < n ? ks_load(vp + 16, n - i - 16)
								  : v_zero();
			_Pragma("GCC unroll 8") for (int h = 0; h < NQ; h++) {
				V sp = v_set1(s[(size_t)h * (size_t)lds + (size_t)p]);
				acc[h][0] = v_fma(sp, x0, acc[h][0]);
				acc[h][1] = v_fma(sp, x1, acc[h][1]);
			}
		}
		_Pragma("GCC unroll 8") for (int h = 0; h < NQ; h++)
			_Pragma("GCC unroll 2") for (int c = 0; c < 2; c++)
				if (i + 16 * c < n)
					ks_store(y + (size_t)h * (size_t)n + i + 16 * c, acc[h][c],
						 n - i - 16 * c);
	}
}

static void att_values(float *y, const float *s, int lds, int nq, const float *v, int ldv,
		       int np, int n)
{
	switch (nq) {
#if KS_ATT_GROUP > 4
	case 8: att_values_q(y, s, lds, v, ldv, np, n, 8); return;
	case 7: att_values_q(y, s, lds, v, ldv, np, n, 7); return;
	case 6: att_values_q(y, s, lds, v, ldv, np, n, 6); return;
	case 5: att_values_q(y, s, lds, v, ldv, np, n, 5); return;
#endif
	case 4: att_values_q(y, s, lds, v, ldv, np, n, 4); return;
	case 3: att_values_q(y, s, lds, v, ldv, np, n, 3); return;
	case 2: att_values_q(y, s, lds, v, ldv, np, n, 2); return;
	default: att_values_q(y, s, lds, v, ldv, np, n, 1); return;
	}
}

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
	float r = 1.0f / sqrtf(dot(x, x, n) / (float)n + eps);
	V rv = v_set1(r);
	for (int i = 0; i < n; i += 16)
		ks_store(out + i, v_mul(ks_load(w + i, n - i), v_mul(ks_load(x + i, n - i), rv)),
			 n - i);
}

/* kexp (kernels.h), lane by lane. */
KS_AI V vexp(V x)
{
	/* The clamp keeps a NaN, as kexp's comparisons do: min(a, b) and
	 * max(a, b) return b when either is NaN, so x goes second. */
	x = v_max(v_set1(KEXP_LO), v_min(v_set1(KEXP_HI), x));
	V n = v_rint(v_mul(x, v_set1(KEXP_LOG2E)));
	V r = v_fma(n, v_set1(-KEXP_C1), x);
	r = v_fma(n, v_set1(-KEXP_C2), r);
	V p = v_set1(KEXP_P0);
	p = v_fma(p, r, v_set1(KEXP_P1));
	p = v_fma(p, r, v_set1(KEXP_P2));
	p = v_fma(p, r, v_set1(KEXP_P3));
	p = v_fma(p, r, v_set1(KEXP_P4));
	p = v_fma(p, r, v_set1(KEXP_P5));
	V y = v_add(v_fma(p, v_mul(r, r), r), v_set1(1.0f));
	return v_mul(y, v_pow2i(n));
}

static void softmax(float *x, int n)
{
	V mv = v_set1(x[0]);
	int i = 0;
	for (; i + 16 <= n; i += 16)
		mv = v_max(mv, v_load(x + i));
	if (i < n)
		mv = v_keep(mv, v_max(mv, v_loadn(x + i, n - i)), n - i);
	V m = v_set1(v_hmax(mv));
	V acc = v_zero();
	for (i = 0; i < n; i += 16) {
		V e = vexp(v_sub(ks_load(x + i, n - i), m));
		ks_store(x + i, e, n - i);
		acc = ks_keep(acc, v_add(acc, e), n - i);
	}
	V s = v_set1(v_fold(acc));
	for (i = 0; i < n; i += 16)
		ks_store(x + i, v_div(ks_load(x + i, n - i), s), n - i);
}

static void rope(float *x, int n_heads, int head_dim, const float *cos,
		 const float *sin)
{
	int half = head_dim / 2;
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		for (int i = 0; i < half; i += 16) {
			int left = half - i;
			V a = ks_load(v + i, left), b = ks_load(v + i + half, left);
			V c = ks_load(cos + i, left), s = ks_load(sin + i, left);
			ks_store(v + i, v_sub(v_mul(a, c), v_mul(b, s)), left);
			ks_store(v + i + half, v_add(v_mul(b, c), v_mul(a, s)), left);
		}
	}
}

static void silu_mul(float *g, const float *u, int n)
{
	for (int i = 0; i < n; i += 16) {
		V gv = ks_load(g + i, n - i);
		V d = v_add(v_set1(1.0f), vexp(v_neg(gv)));
		ks_store(g + i, v_mul(v_div(gv, d), ks_load(u + i, n - i)), n - i);
	}
}

static const struct kernels ks_kernels = {
	.att_group = KS_ATT_GROUP,
	.att_scores = att_scores,
	.att_values = att_values,
	.rmsnorm = rmsnorm,
	.softmax = softmax,
	.rope = rope,
	.silu_mul = silu_mul,
};
