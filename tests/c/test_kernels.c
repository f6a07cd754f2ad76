/* Kernels: the scalar reference against closed forms computed in double,
 * and every SIMD level this machine has against the scalar reference,
 * bitwise, on sizes that are not multiples of the vector width. */
#include "core/bf16.h"
#include "check.h"
#include "kernels/kernels.h"
#include "kernels/kquant.h"
#include "kernels/matmul.h"
#include "kernels/qtile_isa.h"
#include "kernels/quant_isa.h"

#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 88172645463325252ull;

static float frand(void)  /* uniform in [-1, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

static void fill(float *x, int n, float scale)
{
	for (int i = 0; i < n; i++)
		x[i] = frand() * scale;
}

static int same_bits(const float *a, const float *b, int n)
{
	return memcmp(a, b, sizeof(float) * (size_t)n) == 0;
}

static const int sizes[] = { 1, 3, 7, 15, 16, 17, 31, 33, 64, 100, 257, 1023 };
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])
#define MAXN 1023

/* The scalar reference against double-precision closed forms. */
static void check_reference(const struct kernels *k)
{
	static float a[MAXN], b[MAXN], w[MAXN], out[MAXN];
	double worst_dot = 0, worst_exp = 0, worst_norm = 0, worst_soft = 0,
	       worst_silu = 0;
	for (int si = 0; si < NSIZES; si++) {
		int n = sizes[si];
		fill(a, n, 2);
		fill(b, n, 2);
		fill(w, n, 1);
		double d = 0, ad = 0;
		for (int i = 0; i < n; i++) {
			d += (double)a[i] * b[i];
			ad += fabs((double)a[i] * b[i]);
		}
		float dk;
		k->att_scores(&dk, 1, a, 1, b, 0, 1, n, 1.0f);  /* one score, scale 1: the dot */
		double err = fabs(dk - d) / (ad + 1e-30);
		worst_dot = err > worst_dot ? err : worst_dot;

		/* the values: out = w + 0.5 a + 0.25 b + 2 w, three fmaf rounding
		 * each element at most three times */
		const float sv[3] = { 0.5f, 0.25f, 2.0f };
		static float rows[3 * MAXN];
		memcpy(rows, a, sizeof(float) * n);
		memcpy(rows + n, b, sizeof(float) * n);
		memcpy(rows + 2 * n, w, sizeof(float) * n);
		memcpy(out, w, sizeof(float) * n);
		k->att_values(out, sv, 3, 1, rows, n, 3, n);
		for (int i = 0; i < n; i++) {
			double want = 3.0 * w[i] + 0.5 * a[i] + 0.25 * b[i];
			double mag = fabs(3.0 * w[i]) + fabs(0.5 * a[i]) + fabs(0.25 * b[i]);
			CHECK(fabs(out[i] - want) <= 4 * 0x1p-24 * mag,
			      "att_values n=%d [%d]: %.9g, want %.9g", n, i, out[i], want);
		}

		double ss = 0;
		for (int i = 0; i < n; i++)
			ss += (double)a[i] * a[i];
		double r = 1 / sqrt(ss / n + 1e-6);
		k->rmsnorm(out, a, w, n, 1e-6f);
		for (int i = 0; i < n; i++) {
			double e = fabs(out[i] - w[i] * a[i] * r) / (fabs(w[i] * a[i] * r) + 1e-30);
			worst_norm = e > worst_norm ? e : worst_norm;
		}

		memcpy(out, a, sizeof(float) * n);
		for (int i = 0; i < n; i++)
			out[i] *= 20;
		double mx = out[0], s = 0;
		for (int i = 0; i < n; i++)
			mx = out[i] > mx ? out[i] : mx;
		for (int i = 0; i < n; i++)
			s += exp(out[i] - mx);
		float in[MAXN];
		memcpy(in, out, sizeof(float) * n);
		k->softmax(out, n);
		for (int i = 0; i < n; i++) {
			double p = exp(in[i] - mx) / s;
			double e = fabs(out[i] - p) / p;
			worst_soft = e > worst_soft ? e : worst_soft;
		}

		memcpy(out, a, sizeof(float) * n);
		for (int i = 0; i < n; i++)
			out[i] *= 10;
		memcpy(in, out, sizeof(float) * n);
		k->silu_mul(out, b, n);
		for (int i = 0; i < n; i++) {
			double g = in[i], want = g / (1 + exp(-g)) * b[i];
			double e = fabs(out[i] - want) / (fabs(want) + 1e-30);
			worst_silu = e > worst_silu ? e : worst_silu;
		}
	}
	for (float x = -87.0f; x <= 88.0f; x += 0.37f) {
		double e = fabs(kexp(x) - exp((double)x)) / exp((double)x);
		worst_exp = e > worst_exp ? e : worst_exp;
	}
	printf("reference vs double (relative): dot %.2g, exp %.2g, rmsnorm %.2g, "
	       "softmax %.2g, silu %.2g\n", worst_dot, worst_exp, worst_norm,
	       worst_soft, worst_silu);
	CHECK(worst_dot < 1e-6, "dot: relative error %g", worst_dot);
	CHECK(worst_exp < 3e-7, "exp: relative error %g", worst_exp);
	CHECK(worst_norm < 1e-6, "rmsnorm: relative error %g", worst_norm);
	/* exp(x - max) inherits the rounding of x - max (up to 80 here). */
	CHECK(worst_soft < 1e-5, "softmax: relative error %g", worst_soft);
	CHECK(worst_silu < 2e-6, "silu_mul: relative error %g", worst_silu);

	/* RoPE rotates each pair (i, i + d/2) by the angle of (cos, sin). */
	float x[2 * 14], c[7], sn[7], orig[2 * 14];
	fill(x, 28, 1);
	memcpy(orig, x, sizeof x);
	for (int i = 0; i < 7; i++) {
		c[i] = cosf(0.3f * i);
		sn[i] = sinf(0.3f * i);
	}
	k->rope(x, 2, 14, c, sn);
	double worst_rope = 0;
	for (int h = 0; h < 2; h++)
		for (int i = 0; i < 7; i++) {
			double a0 = orig[h * 14 + i], b0 = orig[h * 14 + i + 7];
			double e1 = fabs(x[h * 14 + i] - (a0 * c[i] - b0 * sn[i]));
			double e2 = fabs(x[h * 14 + i + 7] - (b0 * c[i] + a0 * sn[i]));
			worst_rope = fmax(worst_rope, fmax(e1, e2));
		}
	CHECK(worst_rope < 1e-6, "rope: error %g", worst_rope);
}

/* Rows [r0, r1) of the rows x cols matrix of type `type` at w (il: its rows
 * interleaved) times T inputs x, ldx apart, through k's table, or through
 * fn when it is not NULL. */
static void mm(const struct kernels *k, kern_mm_fn *fn, float *y, int ldy, enum wtype type,
	       const void *w, int rows, int cols, int il, int r0, int r1, const float *x,
	       int ldx, int T)
{
	struct wmat m = { .type = type, .rows = rows, .cols = cols, .data = w, .il = il };
	struct kern_mm p = { .y = y, .ldy = ldy, .w = &m, .r0 = r0, .r1 = r1, .x = x,
			     .ldx = ldx, .T = T };
	if (fn)
		fn(&p);
	else
		kern_matmul(k, &p);
}

/* Attention over enough positions for the blocks of eight that AVX-512
 * scores together, and their tails: 1 to 21 positions, rows 16 floats
 * longer than the head apart, 1 to att_group heads, widths that are
 * whole 16-lane steps and one that is not. */
static void check_attention(const struct kernels *ref, const struct kernels *k)
{
	enum { MAXP = 21, MAXD = 80, LD = MAXD + 16 };
	static const int widths[] = { 16, 24, 64, 80 }, positions[] = { 1, 7, 8, 9, 16, 21 };
	static float q[ATT_MAXQ * MAXD], kv[MAXP * LD], y1[ATT_MAXQ * MAXD], y2[ATT_MAXQ * MAXD];
	float s1[ATT_MAXQ * MAXP], s2[ATT_MAXQ * MAXP];
	for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
		for (size_t pi = 0; pi < sizeof positions / sizeof positions[0]; pi++)
			for (int nq = 1; nq <= k->att_group; nq++) {
				int n = widths[wi], np = positions[pi], ld = n + 16;
				fill(q, nq * n, 2);
				fill(kv, np * ld, 2);
				ref->att_scores(s1, MAXP, q, nq, kv, ld, np, n, 0.125f);
				k->att_scores(s2, MAXP, q, nq, kv, ld, np, n, 0.125f);
				for (int h = 0; h < nq; h++)
					CHECK(same_bits(s1 + MAXP * h, s2 + MAXP * h, np),
					      "%s att_scores n=%d over %d positions, heads %d: head %d "
					      "differs", cpu_level_name(k->level), n, np, nq, h);
				fill(y1, nq * n, 1);
				memcpy(y2, y1, sizeof(float) * (size_t)(nq * n));
				ref->att_values(y1, s1, MAXP, nq, kv, ld, np, n);
				k->att_values(y2, s1, MAXP, nq, kv, ld, np, n);
				CHECK(same_bits(y1, y2, nq * n),
				      "%s att_values n=%d over %d positions, heads %d differs",
				      cpu_level_name(k->level), n, np, nq);
			}
}

/* A SIMD table against the scalar one, bitwise. */
static void check_level(const struct kernels *ref, const struct kernels *k)
{
	check_attention(ref, k);
	const char *name = cpu_level_name(k->level);
	static float a[MAXN], b[MAXN], w[MAXN], o1[MAXN], o2[MAXN];
	for (int si = 0; si < NSIZES; si++) {
		int n = sizes[si];
		fill(a, n, 3);
		fill(b, n, 3);
		fill(w, n, 1);
		/* attention of 1 to att_group query heads (rows of a) over 3
		 * cached rows n + 2 apart (inside b's MAXN) */
		for (int nq = 1; nq <= k->att_group && nq * n <= MAXN; nq++) {
			int np = 3 * (n + 2) <= MAXN ? 3 : 1;
			float s1[ATT_MAXQ * 3], s2[ATT_MAXQ * 3];
			static float y1[MAXN], y2[MAXN];
			ref->att_scores(s1, 3, a, nq, b, n + 2, np, n, 0.125f);
			k->att_scores(s2, 3, a, nq, b, n + 2, np, n, 0.125f);
			for (int h = 0; h < nq; h++)
				CHECK(same_bits(s1 + 3 * h, s2 + 3 * h, np),
				      "%s att_scores n=%d heads %d: head %d differs", name, n, nq, h);
			memcpy(y1, w, sizeof(float) * n * (size_t)nq);
			memcpy(y2, w, sizeof(float) * n * (size_t)nq);
			ref->att_values(y1, s1, 3, nq, b, n + 2, np, n);
			k->att_values(y2, s1, 3, nq, b, n + 2, np, n);
			CHECK(same_bits(y1, y2, n * nq), "%s att_values n=%d heads %d differs", name,
			      n, nq);
		}

		ref->rmsnorm(o1, a, w, n, 1e-5f);
		k->rmsnorm(o2, a, w, n, 1e-5f);
		CHECK(same_bits(o1, o2, n), "%s rmsnorm n=%d differs", name, n);

		for (int i = 0; i < n; i++)
			o1[i] = o2[i] = a[i] * 30;
		ref->softmax(o1, n);
		k->softmax(o2, n);
		CHECK(same_bits(o1, o2, n), "%s softmax n=%d differs", name, n);

		for (int i = 0; i < n; i++)
			o1[i] = o2[i] = a[i] * 40;  /* reaches the exp clamps */
		ref->silu_mul(o1, b, n);
		k->silu_mul(o2, b, n);
		CHECK(same_bits(o1, o2, n), "%s silu_mul n=%d differs", name, n);

		if (n % 2 == 0 && n <= 64) {
			static float cs[32], sn[32];
			fill(cs, n / 2, 1);
			fill(sn, n / 2, 1);
			memcpy(o1, a, sizeof(float) * n * 3);
			memcpy(o2, a, sizeof(float) * n * 3);
			ref->rope(o1, 3, n, cs, sn);
			k->rope(o2, 3, n, cs, sn);
			CHECK(same_bits(o1, o2, 3 * n), "%s rope head_dim=%d differs", name, n);
		}
	}

	/* Matrix products: odd rows, cols and input counts, f32 and bf16, row
	 * ranges that do not start at 0. The last two reach the AVX-512
	 * prefill's every path: panels of 8, 4 and 1 rows, more columns than
	 * one pass takes (1100: two of 512 and a tail), more inputs than one
	 * group (50). */
	int shapes[][3] = { { 13, 37, 1 }, { 9, 16, 5 }, { 21, 100, 7 }, { 4, 33, 4 },
			    { 5, 18, 6 }, { 7, 50, 13 }, { 26, 1100, 50 }, { 17, 64, 2 } };
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int rows = shapes[s][0], cols = shapes[s][1], T = shapes[s][2];
		float *wf = malloc(sizeof(float) * rows * cols);
		uint16_t *wb = malloc(2 * (size_t)rows * cols);
		float *x = malloc(sizeof(float) * T * cols);
		float *y1 = calloc((size_t)T * rows, sizeof(float));
		float *y2 = calloc((size_t)T * rows, sizeof(float));
		fill(wf, rows * cols, 1);
		fill(x, T * cols, 1);
		for (int i = 0; i < rows * cols; i++)
			wb[i] = f32_to_bf16(wf[i]);
		mm(ref, NULL, y1, rows, WT_F32, wf, rows, cols, 0, 1, rows, x, cols, T);
		mm(k, NULL, y2, rows, WT_F32, wf, rows, cols, 0, 1, rows, x, cols, T);
		CHECK(same_bits(y1, y2, T * rows), "%s f32 product %dx%d T=%d differs",
		      name, rows, cols, T);
		mm(ref, NULL, y1, rows, WT_BF16, wb, rows, cols, 0, 1, rows, x, cols, T);
		mm(k, NULL, y2, rows, WT_BF16, wb, rows, cols, 0, 1, rows, x, cols, T);
		CHECK(same_bits(y1, y2, T * rows), "%s bf16 product %dx%d T=%d differs",
		      name, rows, cols, T);
		/* binary16 weights: the same bits as the reference, and as the
		 * float32 product of the exactly widened matrix (an independent
		 * path: f16_to_f32, then the f32 product). */
		uint16_t *wh = malloc(2 * (size_t)rows * cols);
		for (int i = 0; i < rows * cols; i++) {
			wh[i] = f32_to_f16(wf[i]);
			wf[i] = f16_to_f32(wh[i]);
		}
		mm(ref, NULL, y1, rows, WT_F16, wh, rows, cols, 0, 1, rows, x, cols, T);
		mm(k, NULL, y2, rows, WT_F16, wh, rows, cols, 0, 1, rows, x, cols, T);
		CHECK(same_bits(y1, y2, T * rows), "%s f16 product %dx%d T=%d differs",
		      name, rows, cols, T);
		mm(ref, NULL, y1, rows, WT_F32, wf, rows, cols, 0, 1, rows, x, cols, T);
		CHECK(same_bits(y1, y2, T * rows),
		      "%s f16 product %dx%d T=%d: not the f32 product of the widened weights",
		      name, rows, cols, T);
		free(wh);
		mm(k, NULL, y2, rows, WT_BF16, wb, rows, cols, 0, 1, rows, x, cols, T);
		/* Each output is the canonical dot of its row: a matvec of one
		 * input gives the same bits as the batched product. */
		float *one = calloc((size_t)rows, sizeof(float));
		mm(k, NULL, one, rows, WT_BF16, wb, rows, cols, 0, rows - 1, rows, x + (T - 1) * cols,
		   cols, 1);
		CHECK(same_bits(&one[rows - 1], &y2[(T - 1) * rows + rows - 1], 1),
		      "%s bf16 product: batch and matvec differ", name);
		free(one);
		free(wf);
		free(wb);
		free(x);
		free(y1);
		free(y2);
	}
}

/* Interleaved rows (weights.h): kern_interleave puts element (r, c) where
 * wmat_at says (bf16 columns paired, placed here by the layout's rule),
 * and every level's products on the interleaved matrix give the bits of
 * the row-major reference, over row ranges that start inside
 * a block and T of 1 (decode) and more (prefill); kern_row reads rows back.
 * The same in column panels (the last field 1: bf16 and f16 rows longer
 * than WMAT_PANEL_COLS), whose sums the decode kernels carry from panel to
 * panel (T < 16; the carry holds 1024 vectors, so T 9 takes the 36 rows in
 * groups of 112: one group, and T 15 of 68) and prefill widens across. */
static void check_interleaved(void)
{
	int shapes[][4] = { { 8, 64, 1, 0 }, { 12, 128, 5, 0 }, { 20, 192, 7, 0 },
			    { 4, 896, 1, 0 }, { 28, 1088, 50, 0 }, { 12, 1088, 1, 1 },
			    { 8, 2112, 3, 1 }, { 36, 1152, 9, 1 }, { 20, 2176, 20, 1 },
			    { 72, 1088, 15, 1 } };
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int rows = shapes[s][0], cols = shapes[s][1], T = shapes[s][2];
		int panels = shapes[s][3];
		size_t n = (size_t)rows * cols;
		float *wf = malloc(sizeof(float) * n), *wfi = malloc(sizeof(float) * n);
		uint16_t *wb = malloc(2 * n), *wbi = malloc(2 * n), *wh = malloc(2 * n),
			 *whi = malloc(2 * n);
		float *x = malloc(sizeof(float) * T * cols), *row = malloc(sizeof(float) * cols);
		float *y1 = calloc((size_t)T * rows, sizeof(float));
		float *y2 = calloc((size_t)T * rows, sizeof(float));
		fill(wf, (int)n, 1);
		fill(x, T * cols, 1);
		for (size_t i = 0; i < n; i++) {
			wb[i] = f32_to_bf16(wf[i]);
			wh[i] = f32_to_f16(wf[i]);
		}
		memcpy(wfi, wf, sizeof(float) * n);
		memcpy(wbi, wb, 2 * n);
		memcpy(whi, wh, 2 * n);
		struct wmat mf = { .type = WT_F32, .rows = rows, .cols = cols, .data = wfi },
			    mb = { .type = WT_BF16, .rows = rows, .cols = cols, .data = wbi },
			    mh = { .type = WT_F16, .rows = rows, .cols = cols, .data = whi };
		CHECK(wmat_can_interleave(&mf) && kern_interleave(&mf, wfi, panels) == 0 &&
		      kern_interleave(&mb, wbi, panels) == 0 &&
		      kern_interleave(&mh, whi, panels) == 0 && mf.il == 1 &&
		      mb.il == 1 + panels && mh.il == 1 + panels, "interleave %dx%d", rows, cols);
		int bad = 0;
		for (int r = 0; r < rows; r++) {
			for (int c = 0; c < cols; c++) {
				bad += wfi[wmat_at(&mf, r, c)] != wf[(size_t)r * cols + c];
				bad += whi[wmat_at(&mh, r, c)] != wh[(size_t)r * cols + c];
				/* bf16 columns paired: word j of each 32 holds j, j + 16 */
				int j = c % 32, cc = c - j + (j < 16 ? 2 * j : 2 * (j - 16) + 1);
				/* in panels: panel p of 1024 columns at p * 1024 * rows,
				 * laid out as a matrix of its own width */
				int p = panels ? cc / 1024 : 0, pw = panels && cols - 1024 * p < 1024 ?
					cols - 1024 * p : panels ? 1024 : cols;
				bad += wbi[(size_t)p * 1024 * rows + wmat_row_at(r, pw, 1) +
					   wmat_il_col(cc - 1024 * p)] != wb[(size_t)r * cols + c];
			}
			kern_row_float(&mb, r, row);
			for (int c = 0; c < cols; c++)
				bad += row[c] != bf16_to_f32(wb[(size_t)r * cols + c]);
		}
		CHECK(bad == 0, "interleaved %dx%d: %d elements misplaced", rows, cols, bad);
		const struct kernels *ref = kernels_for(CPU_SCALAR);
		for (int l = CPU_SCALAR; l <= (int)cpu_level_env(NULL); l++) {
			const struct kernels *k = kernels_for((enum cpu_level)l);
			const char *name = cpu_level_name(k->level);
			/* each product: row-major by the reference, interleaved by k */
			enum wtype types[] = { WT_F32, WT_BF16, WT_F16 };
			const char *tn[] = { "f32", "bf16", "f16" };
			const void *rm[] = { wf, wb, wh }, *il[] = { wfi, wbi, whi };
			for (int r0 = 0; r0 < 3; r0 += 2)
				for (int i = 0; i < 3; i++) {
					mm(ref, NULL, y1, rows, types[i], rm[i], rows, cols, 0, r0, rows, x,
					   cols, T);
					mm(k, NULL, y2, rows, types[i], il[i], rows, cols,
					   i ? mb.il : mf.il, r0, rows, x, cols, T);
					CHECK(same_bits(y1, y2, T * rows), "%s %s interleaved %dx%d "
					      "from row %d differs", name, tn[i], rows, cols, r0);
				}
		}
		free(wf), free(wfi), free(wb), free(wbi), free(wh), free(whi);
		free(x), free(row), free(y1), free(y2);
	}
}

/* Non-finite inputs (a NaN or Inf weight's descendants) give NaN and Inf
 * in the same places on every level, never a finite number that hides
 * them: exp's clamp once turned NaN into exp(88). Where the scalar result
 * is not NaN the bits are the same; a NaN's payload is not compared. */
static int same_or_both_nan(const float *a, const float *b, int n)
{
	for (int i = 0; i < n; i++)
		if (isnan(a[i]) != isnan(b[i]) || (!isnan(a[i]) && !same_bits(&a[i], &b[i], 1)))
			return 0;
	return 1;
}

static void check_nonfinite(const struct kernels *ref, const struct kernels *k)
{
	const char *name = cpu_level_name(k->level);
	const float specials[] = { NAN, INFINITY, -INFINITY, -NAN };
	enum { N = 37 };
	for (int si = 0; si < 4; si++)
		for (int at = 0; at < N; at += 7) {
			float g1[N], g2[N], u[N], s1[N], s2[N], r1[N], r2[N], w[N];
			fill(g1, N, 3);
			fill(u, N, 2);
			fill(w, N, 1);
			g1[at] = specials[si];
			memcpy(g2, g1, sizeof g1);
			memcpy(s1, g1, sizeof g1);
			memcpy(s2, g1, sizeof g1);
			ref->silu_mul(g1, u, N);
			k->silu_mul(g2, u, N);
			CHECK(same_or_both_nan(g1, g2, N), "%s silu_mul with %g at %d", name,
			      specials[si], at);
			CHECK(isnan(specials[si]) ? isnan(g1[at]) : !isnan(g1[at]) || specials[si] < 0,
			      "scalar silu_mul of %g: %g", specials[si], g1[at]);
			ref->softmax(s1, N);
			k->softmax(s2, N);
			CHECK(same_or_both_nan(s1, s2, N), "%s softmax with %g at %d", name,
			      specials[si], at);
			/* +inf - +inf and NaN make the whole row NaN */
			if (specials[si] != -INFINITY)
				CHECK(isnan(s1[0]) && isnan(s1[N - 1]), "scalar softmax with %g: %g",
				      specials[si], s1[0]);
			ref->rmsnorm(r1, s1, w, N, 1e-6f);
			k->rmsnorm(r2, s1, w, N, 1e-6f);
			CHECK(same_or_both_nan(r1, r2, N), "%s rmsnorm with %g at %d", name,
			      specials[si], at);
		}
}

/* The tables honour their level (so QWENPIPE_SIMD caps every kernel):
 * each table's entries are the kernels of its own ISA, never a higher
 * one's; VNNI and vdpbf16ps only at CPU_AVX512, where the CPU has them;
 * every product a forward pass runs is there. */
static void check_tables(void)
{
	const struct kernels *s = kernels_for(CPU_SCALAR);
	CHECK(s->level == CPU_SCALAR && s->q8a_quantize == q8a_quantize_scalar &&
	      s->mm[WT_F32][KA_F32] == kern_mm_f32_scalar && s->mm[WT_Q4][KA_F32] == q4_mm_scalar &&
	      s->mm[WT_Q8][KA_Q8] == qtile_mm_scalar && s->mm[WT_Q6K][KA_Q8] == kq_q8a_scalar &&
	      s->mm[WT_Q4K][KA_F32] == kq_mm_scalar && s->mm[WT_BF16][KA_B16] == kern_mm_b16_ref,
	      "the scalar table holds a SIMD kernel");
	for (int l = CPU_SCALAR; l <= (int)cpu_detect(); l++) {
		const struct kernels *k = kernels_for((enum cpu_level)l);
		int missing = 0;
		for (int t = 0; t < WT_COUNT; t++)
			missing += !k->mm[t][KA_F32] + (t >= WT_Q8 && t != WT_F16 && !k->mm[t][KA_Q8]);
		CHECK((int)k->level == l && !missing && k->mm[WT_BF16][KA_B16] && k->q8a_quantize,
		      "%s table: %d products missing", cpu_level_name((enum cpu_level)l), missing);
	}
	if (cpu_detect() >= CPU_AVX2) {
		const struct kernels *k = kernels_for(CPU_AVX2);
		CHECK(k->q8a_quantize == q8a_quantize_scalar && k->mm[WT_Q4][KA_Q8] == qtile_mm_avx2 &&
		      k->mm[WT_Q50][KA_Q8] == qtile_mm_avx2 && k->mm[WT_Q5K][KA_Q8] == kq_q8a_avx2 &&
		      k->mm[WT_Q8][KA_F32] == q8_mm_avx2 && k->mm[WT_BF16][KA_B16] == kern_mm_b16_ref,
		      "the avx2 table holds an AVX-512 kernel");
	}
	if (cpu_detect() == CPU_AVX512) {
		const struct kernels *k = kernels_for(CPU_AVX512);
		CHECK(k->mm[WT_Q4][KA_Q8] == (kern_has_vnni() ? qtile_mm_vnni : qtile_mm_avx2) &&
		      k->mm[WT_BF16][KA_B16] ==
			      (kern_has_dpbf16() ? kern_mm_b16_dpbf16 : kern_mm_b16_ref) &&
		      k->q8a_quantize == q8a_quantize_avx512,
		      "the avx512 table: not the kernels this CPU has");
	}
}

int main(void)
{
	const struct kernels *ref = kernels_for(CPU_SCALAR);
	check_reference(ref);
	/* scripts/numerics-matrix reads this line for the levels to run */
	printf("this machine: %s\n", cpu_level_name(cpu_level_env(NULL)));
	for (int l = CPU_AVX2; l <= (int)cpu_level_env(NULL); l++) {
		check_level(ref, kernels_for((enum cpu_level)l));
		check_nonfinite(ref, kernels_for((enum cpu_level)l));
	}
	printf("vdpbf16ps: %s\n", kern_has_dpbf16() ? "yes" : "no (the scalar reference)");
	check_interleaved();
	check_tables();
	return check_done("kernels");
}
