/* test_kquant: the K-quant matrices (lib/kernels/kquant.h).
 *
 *  - packing: every super-block written into its tile reads back the same
 *    (codes, scales, mins), on shapes with partial tiles;
 *  - the exact mode at every level is bitwise the float32 product on the
 *    rows kq_dequant_row gives (the canonical dot of the dequantized row),
 *    for any row range and any T;
 *  - int8 activations: the scalar reference against a float64 evaluation
 *    of the same sum, within the bound of its float32 arithmetic; every SIMD
 *    level bitwise equal to the scalar reference, for odd row ranges and T
 *    across the kernels' passes of 4 inputs.
 * The levels are those cpu_level_env() allows (QWENPIPE_SIMD caps them).
 */
#include "check.h"
#include "core/cpu.h"
#include "kernels/kernels.h"
#include "kernels/kquant.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* A float an IEEE half holds exactly (11 significant bits), of either
 * sign, about 2^-10 to 2^-5. */
static float half_value(void)
{
	float m = (float)(1024 + rnd() % 1024);
	return ldexpf(rnd() % 8 ? m : -m, -20 - (int)(rnd() % 6));
}

static void random_block(enum wtype t, struct kq_block *b)
{
	memset(b, 0, sizeof *b);
	b->d = half_value();
	int bits = kq_bits(t);
	if (t == WT_Q6K) {
		for (int j = 0; j < 16; j++)
			b->sc[j] = (int)(rnd() % 256) - 128;
	} else {
		b->dmin = half_value();
		for (int j = 0; j < 8; j++) {
			b->sc[j] = (int)(rnd() % 64);
			b->m[j] = (int)(rnd() % 64);
		}
	}
	for (int c = 0; c < KQ_SB; c++)
		b->q[c] = (uint8_t)(rnd() % (1u << bits));
}

struct mat {
	struct wmat w;
	void *data;
	struct kq_block *blocks;  /* [rows][cols / 256] */
};

static void make(struct mat *m, enum wtype t, int rows, int cols)
{
	size_t bytes = kq_bytes(t, rows, cols);
	m->data = aligned_alloc(64, (bytes + 63) / 64 * 64);
	memset(m->data, 0, bytes);
	m->w = (struct wmat){ .type = t, .rows = rows, .cols = cols, .data = m->data };
	int nsb = cols / KQ_SB;
	m->blocks = malloc(sizeof *m->blocks * (size_t)rows * (size_t)nsb);
	for (int r = 0; r < rows; r++)
		for (int s = 0; s < nsb; s++) {
			random_block(t, &m->blocks[r * nsb + s]);
			kq_put(&m->w, m->data, r, s, &m->blocks[r * nsb + s]);
		}
}

static void unmake(struct mat *m)
{
	free(m->data);
	free(m->blocks);
}

static void test_pack(const struct mat *m)
{
	int nsb = m->w.cols / KQ_SB, same = 1;
	struct kq_block b;
	for (int r = 0; r < m->w.rows; r++)
		for (int s = 0; s < nsb; s++) {
			kq_get(&m->w, r, s, &b);
			same &= memcmp(&b, &m->blocks[r * nsb + s], sizeof b) == 0;
		}
	CHECK(same, "type %d, %d x %d: every super-block reads back as written", m->w.type,
	      m->w.rows, m->w.cols);
}

#define TMAX 6

/* Rows [r0, r1) of w times T inputs, float (x, cols apart) or int8 (a),
 * through k's table. */
static void kmm(const struct kernels *k, const struct wmat *w, float *y, int ldy, int r0,
		int r1, const float *x, const struct q8act *a, int T)
{
	kern_matmul(k, &(struct kern_mm){ .y = y, .ldy = ldy, .w = w, .r0 = r0, .r1 = r1,
					  .x = x, .ldx = w->cols, .T = T, .xa = a });
}

/* The exact mode at every level against the float32 product on the dequantized
 * matrix. */
static void test_exact(const struct mat *m, const float *x)
{
	int rows = m->w.rows, cols = m->w.cols;
	float *wf = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
	float *want = malloc(sizeof(float) * (size_t)rows * TMAX);
	float *y = malloc(sizeof(float) * (size_t)rows * TMAX);
	for (int r = 0; r < rows; r++)
		kq_dequant_row(&m->w, r, wf + (size_t)r * (size_t)cols);
	for (int lv = CPU_SCALAR; lv <= (int)cpu_level_env(NULL); lv++) {
		const struct kernels *k = kernels_for((enum cpu_level)lv);
		kern_matmul(k, &(struct kern_mm){ .y = want, .ldy = rows, .w = &(struct wmat){
			.type = WT_F32, .rows = rows, .cols = cols, .data = wf }, .r0 = 0, .r1 = rows,
			.x = x, .ldx = cols, .T = TMAX });
		for (int T = 1; T <= TMAX; T += 2) {
			int r0 = rows > 4 ? 3 : 0, r1 = rows > 4 ? rows - 1 : rows;
			memset(y, 0, sizeof(float) * (size_t)rows * TMAX);
			kmm(k, &m->w, y, rows, 0, r0, x, NULL, T);
			kmm(k, &m->w, y, rows, r0, r1, x, NULL, T);
			kmm(k, &m->w, y, rows, r1, rows, x, NULL, T);
			CHECK(memcmp(y, want, sizeof(float) * (size_t)rows * (size_t)T) == 0,
			      "%s: type %d, %d x %d, T %d: the exact mode is the float32 product of the "
			      "dequantized rows, bitwise", cpu_level_name((enum cpu_level)lv),
			      m->w.type, rows, cols, T);
		}
	}
	free(wf);
	free(want);
	free(y);
}

/* The int8-activation sum of row r and input a in float64 from the blocks'
 * definition, and the bound of the float32 evaluation: each of the 2K
 * terms (K blocks) is a product of an exact integer by fl(scale * as), one
 * rounding, then added by one fmaf, one more; so the result is within
 * (2K + 1) u of the sum of the terms' magnitudes, u = 2^-24 (to first
 * order; 1% more covers the rest). */
static double ref_q8a(const struct mat *m, int r, const struct q8act *a, double *bound)
{
	int nsb = m->w.cols / KQ_SB, K = m->w.cols / 32;
	double sum = 0, mag = 0;
	for (int s = 0; s < nsb; s++) {
		const struct kq_block *b = &m->blocks[r * nsb + s];
		for (int c = 0; c < KQ_SB; c++) {
			int k = (KQ_SB * s + c) / 32;
			double as = a->scales[k], av = a->q[KQ_SB * s + c];
			if (m->w.type == WT_Q6K) {
				double ds = (float)(b->d * (float)b->sc[c / 16]);
				sum += ds * (b->q[c] - 32) * av * as;
			} else {
				double ds = (float)(b->d * (float)b->sc[c / 32]);
				double dm = (float)(b->dmin * (float)b->m[c / 32]);
				sum += (ds * b->q[c] - dm) * av * as;
			}
		}
		/* the magnitudes, by the kernel's terms */
		for (int kk = 0; kk < 8; kk++) {
			int k = 8 * s + kk;
			double as = fabs(a->scales[k]);
			for (int h = 0; h < 2; h++) {
				long isum = 0, asum = 0;
				for (int c = 16 * h; c < 16 * h + 16; c++) {
					isum += b->q[32 * kk + c] * a->q[32 * k + c];
					asum += a->q[32 * k + c];
				}
				if (m->w.type == WT_Q6K) {
					mag += fabs((double)(isum - 32 * asum) *
						    (float)(b->d * (float)b->sc[2 * kk + h])) * as;
				} else {
					mag += fabs((double)isum * (float)(b->d * (float)b->sc[kk])) * as +
					       fabs((double)asum * (float)(b->dmin * (float)b->m[kk])) * as;
				}
			}
		}
	}
	*bound = (2.0 * K + 1) * ldexp(1, -24) * mag * 1.01;
	return sum;
}

static void test_q8a(const struct mat *m, const struct q8act *a)
{
	int rows = m->w.rows;
	float *want = malloc(sizeof(float) * (size_t)rows * TMAX);
	float *y = malloc(sizeof(float) * (size_t)rows * TMAX);
	kmm(kernels_for(CPU_SCALAR), &m->w, want, rows, 0, rows, NULL, a, TMAX);
	double worst = 0;
	int ok = 1;
	for (int t = 0; t < TMAX; t++)
		for (int r = 0; r < rows; r++) {
			double bound, ref = ref_q8a(m, r, &a[t], &bound);
			double d = fabs(want[(size_t)t * rows + r] - ref);
			ok &= d <= bound;
			worst = d / bound > worst ? d / bound : worst;
		}
	CHECK(ok, "type %d, %d x %d: the scalar reference is within its float32 bound of "
	      "the float64 sum (worst %.3g of the bound)", m->w.type, rows, m->w.cols, worst);
	for (int lv = CPU_AVX2; lv <= (int)cpu_level_env(NULL); lv++)
		for (int T = 1; T <= TMAX; T++) {
			int r0 = rows > 20 ? 5 : 0, r1 = rows > 20 ? rows - 3 : rows;
			memset(y, 0, sizeof(float) * (size_t)rows * TMAX);
			kmm(kernels_for((enum cpu_level)lv), &m->w, y, rows, 0, r0, NULL, a, T);
			kmm(kernels_for((enum cpu_level)lv), &m->w, y, rows, r0, r1, NULL, a, T);
			kmm(kernels_for((enum cpu_level)lv), &m->w, y, rows, r1, rows, NULL, a, T);
			CHECK(memcmp(y, want, sizeof(float) * (size_t)rows * (size_t)T) == 0,
			      "%s%s: type %d, %d x %d, T %d: bitwise the scalar reference",
			      cpu_level_name((enum cpu_level)lv),
			      (lv == CPU_AVX512 && kern_has_vnni()) ? " (VNNI)" : "", m->w.type, rows,
			      m->w.cols, T);
		}
	free(want);
	free(y);
}

int main(void)
{
	static const enum wtype types[] = { WT_Q4K, WT_Q5K, WT_Q6K };
	static const int shapes[][2] = { { 1, 256 }, { 7, 512 }, { 16, 256 }, { 35, 768 },
					 { 48, 512 } };
	int cmax = 768;
	float *x = malloc(sizeof(float) * (size_t)cmax * TMAX);
	struct q8act *a = q8a_alloc(cmax, TMAX);
	for (int ti = 0; ti < 3; ti++)
		for (int si = 0; si < 5; si++) {
			int rows = shapes[si][0], cols = shapes[si][1];
			for (int i = 0; i < cols * TMAX; i++)
				x[i] = (float)((int)(rnd() % 20001) - 10000) / 4096.0f;
			for (int t = 0; t < TMAX; t++)
				kernels_for(CPU_SCALAR)->q8a_quantize(x + (size_t)t * cols, cols, &a[t]);
			struct mat m;
			make(&m, types[ti], rows, cols);
			test_pack(&m);
			test_exact(&m, x);
			test_q8a(&m, a);
			unmake(&m);
		}
	printf("kquant: levels up to %s%s\n", cpu_level_name(cpu_level_env(NULL)),
	       (cpu_level_env(NULL) == CPU_AVX512 && kern_has_vnni()) ? " + VNNI" : "");
	free(x);
	free(a);
	return check_done("test_kquant");
}
