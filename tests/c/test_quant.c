/* quant: the schemes against closed forms, and every float-input kernel this CPU has
 * against the scalar reference and against a float64 dot product of the
 * dequantized weights, on shapes that are not multiples of the vector width. */
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/quant_isa.h"
#include "kernels/qtile.h"
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void)  /* uniform in [-1, 1) */
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

static void fill(float *v, size_t n, float scale)
{
	for (size_t i = 0; i < n; i++)
		v[i] = frand() * scale;
}

/* A quantized matrix with its own storage. */
struct qm {
	struct wmat w;
	void *data;
	float *scales;
};

static void qm_make(struct qm *m, enum wtype t, const float *f, int rows, int cols,
		    int group, int rtn)
{
	m->w = (struct wmat){ .type = t, .rows = rows, .cols = cols, .group_size = group };
	if (t == WT_Q8 && group) {
		/* int8 in groups, as GGUF's Q8_0: each group of a row quantized
		 * on its own by the int8 rule (scale = max|group| / 127) */
		m->data = malloc(q8_data_bytes(rows, cols));
		m->scales = malloc(sizeof(float) * q4_nscales(rows, cols, group));
		for (size_t g = 0; g < q4_nscales(rows, cols, group); g++)
			q8_quantize_row(f + g * group, group, (int8_t *)m->data + g * group,
					&m->scales[g]);
	} else if (t == WT_Q8) {
		m->data = malloc(q8_data_bytes(rows, cols));
		m->scales = malloc(sizeof(float) * (size_t)rows);
		for (int r = 0; r < rows; r++)
			q8_quantize_row(f + (size_t)r * cols, cols,
					(int8_t *)m->data + (size_t)r * cols, &m->scales[r]);
	} else {
		m->data = malloc(q4_data_bytes(rows, cols));
		m->scales = malloc(sizeof(float) * q4_nscales(rows, cols, group));
		for (int r = 0; r < rows; r++)
			(rtn ? q4_quantize_row_rtn : q4_quantize_row)(
				f + (size_t)r * cols, cols, group,
				(uint8_t *)m->data + (size_t)r * cols / 2,
				m->scales + (size_t)r * (cols / group));
	}
	m->w.data = m->data;
	m->w.scales = m->scales;
}

static void qm_free(struct qm *m)
{
	free(m->data);
	free(m->scales);
}

/* Squared error of the dequantized matrix against f. */
static double sq_error(const struct wmat *w, const float *f)
{
	float *row = malloc(sizeof(float) * (size_t)w->cols);
	double e = 0;
	for (int r = 0; r < w->rows; r++) {
		quant_dequant_row(w, r, 0, w->cols, row);
		for (int c = 0; c < w->cols; c++) {
			double d = (double)row[c] - f[(size_t)r * w->cols + c];
			e += d * d;
		}
	}
	free(row);
	return e;
}

static void test_q8_closed_form(void)
{
	/* amax 127 -> scale 1: the codes are the rounded values, halves away
	 * from zero (63.5 -> 64, -0.5 -> -1, 2.5 -> 3, not to even). */
	float w[] = { -127, 63.5f, -0.5f, 0.49f, 1.5f, -2.5f, 2.5f, 126.6f };
	int8_t want[] = { -127, 64, -1, 0, 2, -3, 3, 127 };
	int8_t q[8];
	float s;
	q8_quantize_row(w, 8, q, &s);
	CHECK(s == 1.0f, "q8 scale %g, want 1", s);
	CHECK(memcmp(q, want, 8) == 0, "q8 codes differ from the closed form");

	/* scale = max|row| / 127 with the sign ignored */
	float w2[] = { 0.25f, -12.7f, 3.0f };
	q8_quantize_row(w2, 3, q, &s);
	CHECK(s == 12.7f / 127.0f, "q8 scale %.9g, want %.9g", s, 12.7f / 127.0f);
	CHECK(q[1] == -127 && q[0] == (int8_t)roundf(0.25f / s), "q8 codes %d %d", q[0], q[1]);

	float z[5] = { 0 };
	q8_quantize_row(z, 5, q, &s);
	CHECK(s == 0 && q[0] == 0 && q[4] == 0, "zero row: scale %g", s);
}

static void test_q4_closed_form(void)
{
	/* A group that is exactly s * q with q spanning [-8, 7] is found
	 * exactly: codes, scale and packing. */
	float w[64], s = 0.375f;
	int8_t q[64];
	for (int i = 0; i < 64; i++) {
		q[i] = (int8_t)((i * 7) % 16 - 8);
		w[i] = s * q[i];
	}
	q[5] = -8;
	w[5] = s * -8;
	uint8_t packed[32];
	float sc[2];
	q4_quantize_row(w, 64, 32, packed, sc);
	CHECK(sc[0] == s && sc[1] == s, "q4 scales %g %g, want %g", sc[0], sc[1], s);
	int bad = 0;
	for (int b = 0; b < 2; b++)
		for (int j = 0; j < 16; j++) {
			uint8_t want = (uint8_t)((q[32 * b + j] + 8) | ((q[32 * b + 16 + j] + 8) << 4));
			bad += packed[16 * b + j] != want;
		}
	CHECK(bad == 0, "q4 packing: %d bytes differ from the documented layout", bad);
	struct wmat m = { .type = WT_Q4, .rows = 1, .cols = 64, .data = packed,
			  .scales = sc, .group_size = 32 };
	bad = 0;
	for (int c = 0; c < 64; c++)
		bad += q4_code(&m, 0, c) != q[c];
	CHECK(bad == 0, "q4_code: %d codes differ", bad);
	CHECK(sq_error(&m, w) == 0, "exact group not reproduced exactly");

	/* The baseline: scale = max/7, codes in [-7, 7]. */
	float r[32];
	for (int i = 0; i < 32; i++)
		r[i] = (float)(i % 15 - 7) * 0.5f;  /* max 3.5 -> scale 0.5 */
	q4_quantize_row_rtn(r, 32, 32, packed, sc);
	m.cols = 32;
	bad = 0;
	for (int c = 0; c < 32; c++)
		bad += q4_code(&m, 0, c) != c % 15 - 7;
	CHECK(sc[0] == 0.5f && bad == 0, "rtn: scale %g, %d codes differ", sc[0], bad);

	struct err e;
	CHECK(q4_check_shape(96, 48, &e) < 0 && !strcmp(e.msg, "group size 48 is not a multiple of 32"),
	      "group 48: %s", e.msg);
	CHECK(q4_check_shape(96, 64, &e) < 0 && !strcmp(e.msg, "group size 64 does not divide 96 columns"),
	      "group 64: %s", e.msg);
	CHECK(q4_check_shape(128, 64, &e) == 0, "group 64 of 128 refused");
}

/* int4 scales are IEEE halves (quant.h), so that the tiles hold them in
 * 16 bits: -m / 8 rounded to the nearest half, whose spacing in [1/8, 1/4)
 * is 2^-13 (a closed form, not the converter); m's code stays -8. A scale
 * beyond the halves' range (65504) stays as it is, and only that matrix's
 * tiles keep float32 scales. */
static void test_q4_half_scales(void)
{
	float w[64] = { 0 };
	w[3] = -1.2345678f;  /* -m / 8 = 0.15432..., not a half */
	w[7] = 0.5f;
	w[32 + 9] = 1.0e6f;  /* -m / 8 = -125000: past the halves */
	uint8_t packed[32];
	float sc[2];
	q4_quantize_row(w, 64, 32, packed, sc);
	float want = (float)(nearbyint(1.2345678 / 8 * 8192) / 8192);
	CHECK(sc[0] == want && sc[0] != 1.2345678f / 8.0f, "q4 scale %.9g, want the half %.9g",
	      sc[0], want);
	CHECK(sc[1] == -125000.0f, "q4 scale %.9g past the halves, want -125000", sc[1]);
	struct wmat m = { .type = WT_Q4, .rows = 1, .cols = 64, .data = packed,
			  .scales = sc, .group_size = 32 };
	CHECK(q4_code(&m, 0, 3) == -8 && q4_code(&m, 0, 41) == -8,
	      "q4 codes of m: %d %d, want -8", q4_code(&m, 0, 3), q4_code(&m, 0, 41));
	struct wmat first = m;
	first.cols = 32;
	float sc0 = sc[0];
	first.scales = &sc0;
	CHECK(qtile_scales_for(&first) == QT_F16 && qtile_scales_for(&m) == QT_F32,
	      "tile scales: halves where every scale is one, float32 otherwise");
}

static void test_q4_beats_rtn(void)
{
	/* The searched scales never lose to round-to-nearest on the same
	 * storage, and win clearly on Gaussian-ish weights. */
	int rows = 64, cols = 256;
	float *f = malloc(sizeof(float) * (size_t)rows * cols);
	for (int i = 0; i < rows * cols; i++)
		f[i] = (frand() + frand() + frand()) * 0.02f;
	for (int group = 32; group <= 128; group *= 2) {
		struct qm a, b;
		qm_make(&a, WT_Q4, f, rows, cols, group, 0);
		qm_make(&b, WT_Q4, f, rows, cols, group, 1);
		double ea = sq_error(&a.w, f), eb = sq_error(&b.w, f);
		CHECK(ea < 0.9 * eb, "group %d: searched error %g, rtn %g", group, ea, eb);
		qm_free(&a);
		qm_free(&b);
	}
	free(f);
}

/* Largest |got - want| / (sum |w x| + 1e-30) over rows. */
static double rel_err(const float *got, const double *want, const double *mag, int n)
{
	double m = 0;
	for (int i = 0; i < n; i++) {
		double d = fabs(got[i] - want[i]) / (mag[i] + 1e-30);
		if (d > m || d != d)
			m = d;
	}
	return m;
}

/* The float-activation product at level lv, through its kernel table. */
static void qmm(enum cpu_level lv, const struct wmat *w, float *y, int ldy, int r0, int r1,
		const float *x, int ldx, int T)
{
	kern_matmul(kernels_for(lv), &(struct kern_mm){ .y = y, .ldy = ldy, .w = w, .r0 = r0,
							.r1 = r1, .x = x, .ldx = ldx, .T = T });
}

/* float64 y = dequant(W) x and sum |w x| per row: the independent truth. */
static void truth(const struct wmat *w, const float *x, double *y, double *mag)
{
	float *row = malloc(sizeof(float) * (size_t)w->cols);
	for (int r = 0; r < w->rows; r++) {
		quant_dequant_row(w, r, 0, w->cols, row);
		y[r] = mag[r] = 0;
		for (int c = 0; c < w->cols; c++) {
			y[r] += (double)row[c] * x[c];
			mag[r] += fabs((double)row[c] * x[c]);
		}
	}
	free(row);
}

static void check_kernels(enum wtype type, int rows, int cols, int group)
{
	float *f = malloc(sizeof(float) * (size_t)rows * cols);
	float *x = malloc(sizeof(float) * (size_t)cols * 5);
	fill(f, (size_t)rows * cols, 0.05f);
	fill(x, (size_t)cols * 5, 2.0f);
	struct qm m;
	qm_make(&m, type, f, rows, cols, group, 0);
	double *want = malloc(sizeof(double) * rows), *mag = malloc(sizeof(double) * rows);
	float *y = malloc(sizeof(float) * (rows + 3) * 5), *ys = malloc(sizeof(float) * rows);
	const char *tn = type == WT_Q4 ? "q4" : group ? "q8 grouped" : "q8";

	/* Five vectors at once (y row stride rows + 3): the scalar reference
	 * against the float64 truth, every SIMD kernel bitwise against the
	 * reference (the same canonical order). */
	int ldy = rows + 3;
	float *yref = malloc(sizeof(float) * (size_t)ldy * 5);
	qmm(CPU_SCALAR, &m.w, yref, ldy, 0, rows, x, cols, 5);
	double e = 0;
	for (int t = 0; t < 5; t++) {
		truth(&m.w, x + (size_t)t * cols, want, mag);
		double et = rel_err(yref + (size_t)t * ldy, want, mag, rows);
		e = et > e ? et : e;
	}
	CHECK(e < 1e-5, "%s scalar %dx%d g%d: rel err %g", tn, rows, cols, group, e);
	for (int lv = CPU_SCALAR; lv <= (int)cpu_level_env(NULL); lv++) {
		const char *in = cpu_level_name((enum cpu_level)lv);
		qmm((enum cpu_level)lv, &m.w, y, ldy, 0, rows, x, cols, 5);
		int same = 1;
		for (int t = 0; t < 5; t++)
			same &= !memcmp(y + (size_t)t * ldy, yref + (size_t)t * ldy,
					sizeof(float) * rows);
		CHECK(same, "%s %s %dx%d g%d: not bitwise equal to the reference",
		      tn, in, rows, cols, group);
		/* One vector at a time, and rows split in two calls, give the
		 * same bits (chunked prompts, threads splitting by rows). */
		int k = rows / 3;
		same = 1;
		for (int t = 0; t < 5; t++) {
			qmm((enum cpu_level)lv, &m.w, ys, 0, 0, k, x + (size_t)t * cols, 0, 1);
			qmm((enum cpu_level)lv, &m.w, ys, 0, k, rows, x + (size_t)t * cols, 0, 1);
			same &= !memcmp(y + (size_t)t * ldy, ys, sizeof(float) * rows);
		}
		CHECK(same, "%s %s %dx%d: T=1 calls split by rows differ from one T=5 call",
		      tn, in, rows, cols);
	}
	/* int8 with its rows interleaved (weights.h): every level, T = 5 and row ranges from inside a block, gives the
	 * bits of the row-major matrix. */
	if (wmat_can_interleave(&m.w)) {
		struct wmat wi = m.w;
		void *codes = malloc(q8_data_bytes(rows, cols));
		memcpy(codes, m.data, q8_data_bytes(rows, cols));
		wi.data = codes;
		CHECK(kern_interleave(&wi, codes, 0) == 0 && wi.il, "interleave %dx%d", rows, cols);
		int same = 1;
		for (int lv = CPU_SCALAR; lv <= (int)cpu_level_env(NULL); lv++)
			for (int r0 = 0; r0 < 3; r0 += 2) {
				qmm((enum cpu_level)lv, &wi, y, ldy, r0, rows, x, cols, 5);
				for (int t = 0; t < 5; t++)
					same &= !memcmp(y + (size_t)t * ldy + r0, yref + (size_t)t * ldy + r0,
							sizeof(float) * (size_t)(rows - r0));
			}
		CHECK(same, "q8 interleaved %dx%d: not the bits of the row-major matrix", rows, cols);
		free(codes);
	}
	free(yref);

	qm_free(&m);
	free(f);
	free(x);
	free(want);
	free(mag);
	free(y);
	free(ys);
}

static void test_q8a_closed_form(void)
{
	float x[40];
	for (int i = 0; i < 40; i++)
		x[i] = 0;
	x[0] = -12.7f;
	x[1] = 0.05f;  /* 0.5 of a step: away from zero -> 1 */
	x[33] = 2.0f;
	int8_t q[64];
	float s[2];
	int32_t sums[2], hsums[4];
	struct q8act a = { .q = q, .scales = s, .sums = sums, .hsums = hsums };
	CHECK(q8a_padded(40) == 64, "padded %d", q8a_padded(40));
	kernels_for(CPU_SCALAR)->q8a_quantize(x, 40, &a);
	CHECK(s[0] == 12.7f / 127.0f && q[0] == -127 && q[1] == (int8_t)roundf(0.05f / s[0]),
	      "block 0: scale %g codes %d %d", s[0], q[0], q[1]);
	CHECK(s[1] == 2.0f / 127.0f && q[33] == 127 && q[40] == 0 && q[63] == 0,
	      "block 1: scale %g codes %d pad %d", s[1], q[33], q[63]);
	CHECK(sums[0] == -127 + q[1] && sums[1] == 127, "block sums %d %d", sums[0], sums[1]);
	CHECK(hsums[0] == -127 + q[1] && hsums[1] == 0 && hsums[2] == 127 && hsums[3] == 0,
	      "half-block sums %d %d %d %d", hsums[0], hsums[1], hsums[2], hsums[3]);
}

/* The AVX-512 activation quantizer gives the scalar definition's bits, on
 * random values and on exact ties (k + 1/2 steps of a block whose largest
 * value is 127 steps), for lengths around the block and vector sizes. */
static void test_q8a_simd(void)
{
	if (cpu_level_env(NULL) != CPU_AVX512)
		return;
	int lens[] = { 1, 15, 16, 17, 31, 32, 33, 63, 64, 100, 896 };
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		int n = lens[li], np = q8a_padded(n);
		float *x = malloc(sizeof(float) * (size_t)n);
		for (int kind = 0; kind < 3; kind++) {
			if (kind == 0)
				fill(x, (size_t)n, 3.0f);
			for (int i = 0; i < n && kind > 0; i++)  /* ties, then zeros */
				x[i] = kind == 1 ? (i % 32 == 0 ? 127.0f : (float)(i % 9) - 4.5f) : 0.0f;
			int8_t qa[np], qb[np];
			float sa[np / Q8A_BLOCK], sb[np / Q8A_BLOCK];
			memset(qa, 0x55, sizeof qa);
			memset(qb, 0x66, sizeof qb);
			int32_t ua[np / Q8A_BLOCK], ub[np / Q8A_BLOCK], ha[np / 16], hb[np / 16];
			struct q8act a = { .q = qa, .scales = sa, .sums = ua, .hsums = ha },
				     b = { .q = qb, .scales = sb, .sums = ub, .hsums = hb };
			q8a_quantize_scalar(x, n, &a);
			q8a_quantize_avx512(x, n, &b);
			CHECK(!memcmp(qa, qb, sizeof qa) && !memcmp(sa, sb, sizeof sa) && b.n == n &&
			      !memcmp(ua, ub, sizeof ua) && !memcmp(ha, hb, sizeof ha),
			      "q8a avx512 n=%d kind %d: not the scalar's codes, scales and sums", n,
			      kind);
		}
		free(x);
	}
}

int main(void)
{
	printf("quant: SIMD here: %s\n", cpu_level_name(cpu_level_env(NULL)));
	test_q8_closed_form();
	test_q4_closed_form();
	test_q4_half_scales();
	test_q4_beats_rtn();
	test_q8a_closed_form();
	test_q8a_simd();
	int q8_cols[] = { 1, 7, 15, 16, 17, 31, 33, 64, 100, 257, 128, 896 };
	for (size_t i = 0; i < sizeof q8_cols / sizeof q8_cols[0]; i++)
		for (int rows = 1; rows <= 13; rows += 3)
			check_kernels(WT_Q8, rows, q8_cols[i], 0);
	int q4_shape[][2] = { { 32, 32 }, { 64, 32 }, { 96, 32 }, { 96, 96 },
			      { 320, 64 }, { 288, 32 }, { 256, 128 } };
	for (size_t i = 0; i < sizeof q4_shape / sizeof q4_shape[0]; i++)
		for (int rows = 1; rows <= 13; rows += 3) {
			check_kernels(WT_Q4, rows, q4_shape[i][0], q4_shape[i][1]);
			check_kernels(WT_Q8, rows, q4_shape[i][0], q4_shape[i][1]);
		}
	return check_done("quant");
}
