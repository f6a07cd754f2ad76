/* Kernels: the scalar reference against closed forms computed in double,
 * and every SIMD level this machine has against the scalar reference,
 * bitwise, on sizes that are not multiples of the vector width. */
#include "core/bf16.h"
#include "check.h"
#include "kernels/kernels.h"

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
		double err = fabs(k->dot(a, b, n) - d) / (ad + 1e-30);
		worst_dot = err > worst_dot ? err : worst_dot;

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

/* A SIMD table against the scalar one, bitwise. */
static void check_level(const struct kernels *ref, const struct kernels *k)
{
	const char *name = cpu_level_name(k->level);
	static float a[MAXN], b[MAXN], w[MAXN], o1[MAXN], o2[MAXN];
	for (int si = 0; si < NSIZES; si++) {
		int n = sizes[si];
		fill(a, n, 3);
		fill(b, n, 3);
		fill(w, n, 1);
		float d1 = ref->dot(a, b, n), d2 = k->dot(a, b, n);
		CHECK(same_bits(&d1, &d2, 1), "%s dot n=%d: %.9g vs %.9g", name, n, d1, d2);

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

		memcpy(o1, b, sizeof(float) * n);
		memcpy(o2, b, sizeof(float) * n);
		ref->axpy(o1, 0.7f, a, n);
		k->axpy(o2, 0.7f, a, n);
		CHECK(same_bits(o1, o2, n), "%s axpy n=%d differs", name, n);

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
	 * ranges that do not start at 0. */
	int shapes[][3] = { { 13, 37, 1 }, { 9, 16, 5 }, { 21, 100, 7 }, { 4, 33, 4 },
			    { 5, 18, 6 }, { 7, 50, 13 } };
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
		ref->matmul_f32(y1, rows, wf, cols, 1, rows, x, cols, T);
		k->matmul_f32(y2, rows, wf, cols, 1, rows, x, cols, T);
		CHECK(same_bits(y1, y2, T * rows), "%s matmul_f32 %dx%d T=%d differs",
		      name, rows, cols, T);
		ref->matmul_bf16(y1, rows, wb, cols, 1, rows, x, cols, T);
		k->matmul_bf16(y2, rows, wb, cols, 1, rows, x, cols, T);
		CHECK(same_bits(y1, y2, T * rows), "%s matmul_bf16 %dx%d T=%d differs",
		      name, rows, cols, T);
		/* Each output is the canonical dot of its row: a matvec of one
		 * input gives the same bits as the batched product. */
		float *one = calloc((size_t)rows, sizeof(float));
		k->matmul_bf16(one, rows, wb, cols, rows - 1, rows, x + (T - 1) * cols, cols, 1);
		CHECK(same_bits(&one[rows - 1], &y2[(T - 1) * rows + rows - 1], 1),
		      "%s matmul_bf16: batch and matvec differ", name);
		free(one);
		free(wf);
		free(wb);
		free(x);
		free(y1);
		free(y2);
	}
}

int main(void)
{
	const struct kernels *ref = kernels_for(CPU_SCALAR);
	check_reference(ref);
	/* scripts/numerics-matrix reads this line for the levels to run */
	printf("this machine: %s\n", cpu_level_name(cpu_level_env(NULL)));
	for (int l = CPU_AVX2; l <= (int)cpu_level_env(NULL); l++)
		check_level(ref, kernels_for((enum cpu_level)l));
	return check_done("kernels");
}
