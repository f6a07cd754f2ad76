/* The bf16-activation product (dot_b16, lib/kernels/kernels.h) on the
 * tiles of lib/kernels/btile.h.
 *
 * - Layout: btile_pack_rows puts element (r, c) of a row-major or
 *   interleaved matrix where btile_at says, packed whole or in parts, and
 *   btile_row and kern_row read every row back.
 * - Order: the scalar reference on the tiles gives the bits of dot_b16's
 *   order as written here on the row-major matrix (an independent
 *   implementation), and stays within its rounding bound of a sum in
 *   double: each of the n steps rounds once, by at most 2^-24 of the
 *   running sum, which is at most the sum of |products|.
 * - Closed forms that only the documented order gives: the pair order
 *   (odd element first), one sum per output, FTZ and DAZ.
 * - Every level's table entry (vdpbf16ps where the CPU has it) against
 *   the reference, bitwise, on odd shapes, row ranges that start and end
 *   inside tiles, 1 to 13 inputs, ordinary values and values whose
 *   products fall below FLT_MIN, where the flushes decide the bits.
 */
#include "core/bf16.h"
#include "check.h"
#include "kernels/btile.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

static float frand(void)  /* uniform in [-1, 1) */
{
	return (float)rand() / ((float)RAND_MAX + 1.0f) * 2.0f - 1.0f;
}

static uint16_t b16(float scale)
{
	return f32_to_bf16(frand() * scale);
}

static float flush(float v)
{
	return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;
}

static float fl(uint16_t h)
{
	return flush(bf16_to_f32(h));
}

/* dot_b16 of a row-major row w and an input x, both n long: one sum from
 * +0, pair by pair, the odd element before the even one, each a fused
 * multiply-add flushed; a missing last element is zero. */
static float dot_b16_rowmajor(const uint16_t *w, const uint16_t *x, int n)
{
	float s = 0.0f;
	for (int p = 0; 2 * p < n; p++) {
		float w1 = 2 * p + 1 < n ? fl(w[2 * p + 1]) : 0.0f;
		float x1 = 2 * p + 1 < n ? fl(x[2 * p + 1]) : 0.0f;
		s = flush(fmaf(w1, x1, s));
		s = flush(fmaf(fl(w[2 * p]), fl(x[2 * p]), s));
	}
	return s;
}

/* The tiled copy of a row-major rows x cols bf16 matrix, and its view. */
static void *tile(const uint16_t *w, int rows, int cols, struct wmat *out)
{
	struct wmat src = { .type = WT_BF16, .rows = rows, .cols = cols, .data = w };
	void *t = aligned_alloc(64, btile_bytes(rows, cols));
	btile_pack_rows(&src, t, 0, rows);
	btile_view(&src, t, out);
	return t;
}

/* T inputs of cols elements into rows btile_ldx(cols) apart, padded. */
static uint16_t *inputs(const uint16_t *x, int T, int cols)
{
	int ldx = btile_ldx(cols);
	uint16_t *xb = calloc((size_t)T * ldx, 2);
	for (int t = 0; t < T; t++)
		memcpy(xb + (size_t)t * ldx, x + (size_t)t * cols, 2 * (size_t)cols);
	return xb;
}

static void product(kern_mm_fn *fn, const struct kernels *k, const struct wmat *w,
		    const uint16_t *xb, int T, int r0, int r1, float *y)
{
	struct kern_mm m = { .y = y, .ldy = w->rows, .w = w, .r0 = r0, .r1 = r1, .T = T,
			     .xb = xb };
	if (fn)
		fn(&m);
	else
		kern_matmul(k, &m);
}

static void check_layout(void)
{
	int shapes[][2] = { { 1, 1 }, { 13, 37 }, { 64, 32 }, { 70, 9 }, { 200, 64 },
			    { 1100, 6 }, { 8, 1088 } };
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int rows = shapes[s][0], cols = shapes[s][1];
		size_t n = (size_t)rows * cols;
		uint16_t *w = malloc(2 * n), *wi = malloc(2 * n);
		float *row = malloc(sizeof(float) * cols), *row2 = malloc(sizeof(float) * cols);
		for (size_t i = 0; i < n; i++)
			w[i] = wi[i] = b16(4);
		struct wmat tw, src = { .type = WT_BF16, .rows = rows, .cols = cols, .data = wi };
		int il = wmat_can_interleave(&src) && kern_interleave(&src, wi, 1) == 0;
		/* packed in parts of 64 rows from the interleaved copy where
		 * there is one */
		uint16_t *t = aligned_alloc(64, btile_bytes(rows, cols));
		memset(t, 0xff, btile_bytes(rows, cols));
		for (int r = 0; r < rows; r += BTILE_ROWS)
			btile_pack_rows(&src, t, r, rows - r < BTILE_ROWS ? rows : r + BTILE_ROWS);
		btile_view(&src, t, &tw);
		int bad = 0;
		for (int r = 0; r < rows; r++) {
			btile_row(&tw, r, row);
			kern_row(&tw, r, row2);
			for (int c = 0; c < cols; c++) {
				bad += row[c] != bf16_to_f32(w[(size_t)r * cols + c]) ||
				       row2[c] != row[c];
				bad += t[btile_at(r, c, cols)] != w[(size_t)r * cols + c];
			}
		}
		/* padding: rows past `rows` and the column past an odd cols */
		size_t zeros = 0, total = btile_bytes(rows, cols) / 2;
		for (size_t i = 0; i < total; i++)
			zeros += t[i] == 0;
		size_t pad = total - n;
		size_t wz = 0;
		for (size_t i = 0; i < n; i++)
			wz += w[i] == 0;
		CHECK(bad == 0 && zeros == pad + wz, "btile %dx%d%s: %d misplaced, %zu zeros for "
		      "%zu of padding", rows, cols, il ? " (interleaved)" : "", bad, zeros - wz, pad);
		CHECK(tw.tiled && tw.type == WT_BF16 && wmat_bytes(&tw) == btile_bytes(rows, cols),
		      "btile %dx%d: view", rows, cols);
		free(w), free(wi), free(row), free(row2), free(t);
	}
}

static void check_order(void)
{
	/* against a sum in double */
	double worst = 0, worst_bound = 0;
	int ns[] = { 1, 2, 31, 32, 33, 64, 100, 896, 1023 };
	for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++) {
		int n = ns[s];
		uint16_t *w = malloc(2 * (size_t)n), *x = malloc(2 * (size_t)n);
		for (int i = 0; i < n; i++) {
			w[i] = b16(2);
			x[i] = b16(2);
		}
		double d = 0, ad = 0;
		for (int i = 0; i < n; i++) {
			double p = (double)bf16_to_f32(w[i]) * bf16_to_f32(x[i]);
			d += p;
			ad += fabs(p);
		}
		struct wmat tw;
		void *t = tile(w, 1, n, &tw);
		uint16_t *xb = inputs(x, 1, n);
		float y;
		product(kern_mm_b16_ref, NULL, &tw, xb, 1, 0, 1, &y);
		double e = fabs(y - d) / (ad + 1e-30), bound = n * 0x1p-24;
		CHECK(e <= bound, "dot_b16 n=%d: relative error %g over the bound %g", n, e, bound);
		worst = fmax(worst, e);
		worst_bound = fmax(worst_bound, e / bound);
		free(w), free(x), free(t), free(xb);
	}
	printf("dot_b16 reference vs double (relative to the sum of |products|): %.2g, "
	       "%.2g of the bound\n", worst, worst_bound);

	/* Closed forms, w = 1 throughout. Pair order and one sum: x[1] = 1,
	 * x[0] = 0, then x[3] = 2^-24 (1 + 2^-24 ties to 1), x[2] = -1: 0.
	 * Even elements first, one rounding per pair or sixteen partial sums
	 * would give 2^-24. FTZ: 2^-70 * 2^-70 is a subnormal, flushed to 0.
	 * DAZ: x = 0x0001 (a subnormal bf16) times 2^100 is 0, not 2^-33. */
	uint16_t one[4] = { 0x3f80, 0x3f80, 0x3f80, 0x3f80 }, xo[4] = { 0, 0x3f80, 0xbf80, 0x3380 };
	uint16_t w70 = 0x1c80, w100 = 0x7180, xsub = 0x0001;  /* 2^-70, 2^100 */
	struct { const uint16_t *w, *x; int n; const char *what; } cf[] = {
		{ one, xo, 4, "pair order" }, { &w70, &w70, 1, "FTZ" }, { &w100, &xsub, 1, "DAZ" },
	};
	for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++) {
		struct wmat tw;
		void *t = tile(cf[i].w, 1, cf[i].n, &tw);
		uint16_t *xb = inputs(cf[i].x, 1, cf[i].n);
		for (int l = CPU_SCALAR; l <= (int)cpu_level_env(NULL); l++) {
			float y = -1;
			product(NULL, kernels_for((enum cpu_level)l), &tw, xb, 1, 0, 1, &y);
			CHECK(y == 0 && !signbit(y), "dot_b16 %s, %s: %a, want +0", cf[i].what,
			      cpu_level_name((enum cpu_level)l), y);
		}
		free(t), free(xb);
	}
}

static void check_levels(void)
{
	int shapes[][3] = { { 13, 37, 1 }, { 9, 32, 5 }, { 21, 100, 7 }, { 64, 64, 6 },
			    { 5, 18, 13 }, { 130, 50, 12 }, { 70, 896, 3 }, { 200, 33, 2 } };
	for (int tiny = 0; tiny <= 1; tiny++)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
			int rows = shapes[s][0], cols = shapes[s][1], T = shapes[s][2];
			uint16_t *w = malloc(2 * (size_t)rows * cols);
			uint16_t *x = malloc(2 * (size_t)T * cols);
			float *y0 = malloc(sizeof(float) * T * rows), *y1 = malloc(sizeof(float) * T * rows),
			      *y2 = malloc(sizeof(float) * T * rows);
			/* tiny: products near 2^-126 * 2^-10, half of them below
			 * FLT_MIN, and some inputs subnormal bf16 */
			for (int i = 0; i < rows * cols; i++)
				w[i] = tiny ? f32_to_bf16(frand() * 0x1p-60f) : b16(1);
			for (int i = 0; i < T * cols; i++)
				x[i] = tiny ? (i % 5 == 0 ? (uint16_t)(i & 0x807f)
							  : f32_to_bf16(frand() * 0x1p-66f))
					    : b16(1);
			for (int t = 0; t < T; t++)
				for (int r = 0; r < rows; r++)
					y0[t * rows + r] = dot_b16_rowmajor(w + (size_t)r * cols,
									    x + (size_t)t * cols, cols);
			struct wmat tw;
			void *tl = tile(w, rows, cols, &tw);
			uint16_t *xb = inputs(x, T, cols);
			product(kern_mm_b16_ref, NULL, &tw, xb, T, 0, rows, y1);
			CHECK(!memcmp(y0, y1, sizeof(float) * T * rows),
			      "reference %dx%d T=%d%s: not the documented order", rows, cols, T,
			      tiny ? ", tiny values" : "");
			int r0 = rows > 20 ? 17 : 1, r1 = rows > 70 ? 70 : rows - 1;
			for (int l = CPU_SCALAR; l <= (int)cpu_level_env(NULL); l++) {
				const struct kernels *k = kernels_for((enum cpu_level)l);
				for (int i = 0; i < T * rows; i++)
					y2[i] = -1;
				product(NULL, k, &tw, xb, T, 0, rows, y2);
				int same = !memcmp(y1, y2, sizeof(float) * T * rows);
				/* a row range inside the tiles writes only its rows */
				for (int i = 0; i < T * rows; i++)
					y2[i] = -1;
				product(NULL, k, &tw, xb, T, r0, r1, y2);
				for (int t = 0; t < T; t++)
					for (int r = 0; r < rows; r++)
						same &= r >= r0 && r < r1
								? !memcmp(&y1[t * rows + r], &y2[t * rows + r], 4)
								: y2[t * rows + r] == -1;
				CHECK(same, "%s%s bf16-activation product %dx%d T=%d%s differs",
				      cpu_level_name(k->level),
				      l == CPU_AVX512 && kern_has_dpbf16() ? " (vdpbf16ps)" : "",
				      rows, cols, T, tiny ? ", tiny values" : "");
			}
			free(w), free(x), free(y0), free(y1), free(y2), free(tl), free(xb);
		}
}

int main(void)
{
	printf("btile: %s%s\n", cpu_level_name(cpu_level_env(NULL)),
	       kern_has_dpbf16() ? " + vdpbf16ps" : " (no vdpbf16ps: the scalar reference)");
	srand(11);
	check_layout();
	check_order();
	check_levels();
	return check_done("btile");
}
