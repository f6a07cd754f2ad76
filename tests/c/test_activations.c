/* Int8 and bf16 activations in the forward pass (forward_opts.act8,
 * forward_opts.b16act).
 *
 * Accuracy: the engine's logits against an independent simulation written
 * here in double precision: a plain Qwen2 forward pass (one position at a
 * time, its own RMSNorm, RoPE, attention, SiLU) whose products by an int8 /
 * int4 matrix first round their input the way lib/kernels/quant.h defines it
 * (blocks of 32, scale = max|block| / 127, round half away from zero) and
 * then multiply the dequantized weights by the dequantized activations.
 * The engine computes the same function in float32 with integer sums, so
 * the two differ by float32 rounding, plus any activation that sits so close
 * to a rounding boundary that float32 and double round it apart (exact
 * ties, common with bf16 weights, round alike: the simulation quantizes in
 * float32 as the scheme is defined; it prints the closest call).
 * Measured (largest |logit difference| at the last position; the logits
 * are of magnitude about 10):
 *   shakespeare-tiny int8         engine vs simulation 1.9e-6; the same
 *                                 model without act8 vs the simulation
 *                                 0.025; the simulation with each block's
 *                                 scale taken from the next block 4.0
 *   shakespeare-tiny int4+embed   1.3e-6 (LM head int4 with act8); 0.038
 *   qwen-shapes int8 (untied)     9.3e-7; 0.12
 * The bound SIM_TOL = 1e-4 is 50 times the largest gap and 250 times below
 * the smallest effect of dropping act8; the test also requires the
 * float-activation run and the broken simulation to be at least
 * 10 x SIM_TOL away, so it shows that it can tell.
 *
 * Bf16 activations: the same simulation, whose products by a bf16 matrix
 * first round their input to bf16 (float32, then round to nearest even, as
 * forward.h defines it) and multiply in double. The engine's float32 sums
 * differ from it by float32 rounding, plus activations whose float32 value
 * sits so close to a bf16 rounding boundary that the engine's and the
 * simulation's round apart (it prints the closest call, in units of the
 * bf16 spacing). Measured: shakespeare-tiny bf16, engine vs simulation
 * 7.2e-7, without b16act 0.015: the same SIM_TOL and 10 x SIM_TOL checks
 * apply. qwen-shapes is checked for determinism only: its random weights
 * turn one activation rounded apart (it has exact ties in float32, where
 * one float32 ulp decides) into 5e-3 at the logits, so the simulation
 * cannot bound it.
 *
 * Determinism: the logits are bitwise the same for 1 and 2 threads, any
 * chunking (batch 64, 5, 1) and the scalar, AVX2 and AVX-512 (VNNI,
 * vdpbf16ps) levels.
 */
#include "core/bf16.h"
#include "check.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/qmodel.h"
#include "kernels/quant.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_TOL 1e-4
#define BLOCK 32

static double min_margin;  /* closest |x / scale - (k + 1/2)| seen, in codes */
static int sim_b16;        /* the simulation rounds bf16 matrices' inputs */
static double min_margin_b16;  /* closest call of that rounding, in bf16 spacings */

/* x as float32 rounded to bf16, and how close it was to a tie. */
static double round_b16(double x)
{
	float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, 4);
	min_margin_b16 = fmin(min_margin_b16, fabs((double)(u & 0xffff) - 0x8000) / 65536);
	return bf16_to_f32(f32_to_bf16(f));
}

/* ---- the engine ---- */

static int keep_last(void *arg, int pos, const float *lg, struct err *e)
{
	const struct model *m = ((const struct model **)arg)[0];
	memcpy(((float **)arg)[1], lg, sizeof(float) * m->cfg.vocab_size);
	return 0;
}

/* The last position's logits of ids through the engine. act: the other
 * activations, int8 for a model with integer matrices, else bf16. */
static void engine(const struct model *m, const int *ids, int n, int act, int threads,
		   int batch, enum cpu_level level, float *out)
{
	struct forward f;
	struct forward_opts o = { .threads = threads, .ctx = n, .batch = batch,
				  .level = level, .act8 = act && forward_has_int_weights(m),
				  .b16act = act && !forward_has_int_weights(m) };
	struct err e;
	if (forward_init(&f, m, &o, &e) < 0) {
		fprintf(stderr, "forward_init: %s\n", e.msg);
		exit(1);
	}
	void *arg[2] = { (void *)m, out };
	CHECK(forward_eval(&f, ids, n, 0, keep_last, arg, &e) == 0, "eval: %s", e.msg);
	forward_free(&f);
}

/* ---- the simulation ---- */

static double weight(const struct wmat *w, int r, int c)
{
	size_t i = wmat_at(w, r, c);  /* float matrices of a loaded model are interleaved */
	switch (w->type) {
	case WT_F32: return ((const float *)w->data)[i];
	case WT_BF16: return bf16_to_f32(((const uint16_t *)w->data)[i]);
	case WT_F16: return f16_to_f32(((const uint16_t *)w->data)[i]);
	case WT_Q8:
		return (double)w->scales[w->group_size ? (size_t)r * (w->cols / w->group_size) +
							   c / w->group_size : (size_t)r] *
		       ((const int8_t *)w->data)[i];
	case WT_Q4:
		return (double)w->scales[(size_t)r * (w->cols / w->group_size) +
					 c / w->group_size] * q4_code(w, r, c);
	default:  /* the K-quants: no model here has them */
		break;
	}
	abort();
}

/* y = W x; for an integer W, x rounded to int8 in blocks of 32 first, in
 * float32 as the scheme is defined (scale = max|block| / 127 and
 * code = roundf(x / scale), both in float). broken: each block's codes
 * scaled by the next block's scale (the last by the first's): a misplaced
 * scale, which the test must be able to see. */
static void mv(const struct wmat *w, const double *x, double *y, int broken)
{
	int n = w->cols, nb = (n + BLOCK - 1) / BLOCK;
	double *xq = malloc(sizeof(double) * n);
	float *s = malloc(sizeof(float) * nb);
	memcpy(xq, x, sizeof(double) * n);
	if (w->type == WT_Q8 || w->type == WT_Q4) {
		for (int b = 0; b < nb; b++) {
			float amax = 0;
			for (int c = b * BLOCK; c < n && c < (b + 1) * BLOCK; c++)
				amax = fmaxf(amax, fabsf((float)x[c]));
			s[b] = amax / 127.0f;
		}
		for (int c = 0; c < n; c++) {
			float sc = s[c / BLOCK], q = sc > 0 ? roundf((float)x[c] / sc) : 0;
			q = q > 127 ? 127 : q < -127 ? -127 : q;
			double t = (double)(float)x[c] / sc;
			if (sc > 0)
				min_margin = fmin(min_margin, fabs(fabs(t - trunc(t)) - 0.5));
			xq[c] = (double)q * (broken ? s[(c / BLOCK + 1) % nb] : sc);
		}
	} else if (w->type == WT_BF16 && sim_b16) {
		for (int c = 0; c < n; c++)
			xq[c] = round_b16(x[c]);
	}
	for (int r = 0; r < w->rows; r++) {
		double acc = 0;
		for (int c = 0; c < n; c++)
			acc += weight(w, r, c) * xq[c];
		y[r] = acc;
	}
	free(xq);
	free(s);
}

static void rmsnorm(const double *x, const float *g, int n, double eps, double *out)
{
	double ss = 0;
	for (int i = 0; i < n; i++)
		ss += x[i] * x[i];
	double r = 1 / sqrt(ss / n + eps);
	for (int i = 0; i < n; i++)
		out[i] = g[i] * x[i] * r;
}

static void rope(double *v, int heads, int hd, int pos, double theta)
{
	for (int h = 0; h < heads; h++)
		for (int i = 0; i < hd / 2; i++) {
			double ang = pos * pow(theta, -2.0 * i / hd);
			double *p = v + (size_t)h * hd, a = p[i], b = p[i + hd / 2];
			p[i] = a * cos(ang) - b * sin(ang);
			p[i + hd / 2] = b * cos(ang) + a * sin(ang);
		}
}

/* The last position's logits of ids, in double. */
static void simulate(const struct model *m, const int *ids, int n, int broken, double *out)
{
	const struct model_config *c = &m->cfg;
	int H = c->hidden_size, hd = c->head_dim, NH = c->n_heads, NK = c->n_kv_heads;
	int Q = NH * hd, KV = NK * hd, FF = c->intermediate_size, L = c->n_layers;
	size_t big = (size_t)(FF > Q ? FF : Q) + H;
	double *h = calloc(big, sizeof *h), *xn = calloc(big, sizeof *xn);
	double *q = calloc(big, sizeof *q), *att = calloc(big, sizeof *att);
	double *t1 = calloc(big, sizeof *t1), *t2 = calloc(big, sizeof *t2);
	double *kc = calloc((size_t)L * n * KV, sizeof *kc), *vc = calloc((size_t)L * n * KV, sizeof *vc);
	double *sc = calloc((size_t)n, sizeof *sc);
	for (int pos = 0; pos < n; pos++) {
		for (int i = 0; i < H; i++)
			h[i] = weight(&m->w.embed, ids[pos], i);
		for (int l = 0; l < L; l++) {
			const struct layer_weights *W = &m->w.layers[l];
			double *k = kc + ((size_t)l * n + pos) * KV, *v = vc + ((size_t)l * n + pos) * KV;
			rmsnorm(h, W->attn_norm, H, c->rms_norm_eps, xn);
			mv(&W->wq, xn, q, broken);
			mv(&W->wk, xn, k, broken);
			mv(&W->wv, xn, v, broken);
			for (int i = 0; i < Q; i++)
				q[i] += W->bq[i];
			for (int i = 0; i < KV; i++) {
				k[i] += W->bk[i];
				v[i] += W->bv[i];
			}
			rope(q, NH, hd, pos, c->rope_theta);
			rope(k, NK, hd, pos, c->rope_theta);
			for (int hh = 0; hh < NH; hh++) {
				int kh = hh / (NH / NK);
				double mx = -INFINITY, sum = 0;
				for (int p = 0; p <= pos; p++) {
					const double *kp = kc + ((size_t)l * n + p) * KV + (size_t)kh * hd;
					double d = 0;
					for (int i = 0; i < hd; i++)
						d += q[hh * hd + i] * kp[i];
					sc[p] = d / sqrt(hd);
					mx = fmax(mx, sc[p]);
				}
				for (int p = 0; p <= pos; p++)
					sum += sc[p] = exp(sc[p] - mx);
				for (int i = 0; i < hd; i++) {
					double a = 0;
					for (int p = 0; p <= pos; p++)
						a += sc[p] / sum * vc[((size_t)l * n + p) * KV + (size_t)kh * hd + i];
					att[hh * hd + i] = a;
				}
			}
			mv(&W->wo, att, t1, broken);
			for (int i = 0; i < H; i++)
				h[i] += t1[i];
			rmsnorm(h, W->mlp_norm, H, c->rms_norm_eps, xn);
			mv(&W->gate, xn, t1, broken);
			mv(&W->up, xn, t2, broken);
			for (int i = 0; i < FF; i++)
				t1[i] = t1[i] / (1 + exp(-t1[i])) * t2[i];
			mv(&W->down, t1, t2, broken);
			for (int i = 0; i < H; i++)
				h[i] += t2[i];
		}
	}
	rmsnorm(h, m->w.final_norm, H, c->rms_norm_eps, xn);
	mv(&m->w.lm_head, xn, out, broken);
	free(h), free(xn), free(q), free(att), free(t1), free(t2), free(kc), free(vc), free(sc);
}

static double max_diff(const float *a, const double *b, int n)
{
	double m = 0;
	for (int i = 0; i < n; i++) {
		double d = fabs(a[i] - b[i]);
		m = d > m || d != d ? d : m;
	}
	return m;
}

/* One model against the simulation, then threads, chunking and level:
 * s quantizes it and runs int8 activations; s NULL runs the bf16 model
 * with bf16 activations. accuracy 0: determinism only (see the top);
 * with_broken: the simulation with misplaced scales must be far off too. */
static void check_case(const char *dir, const char *ids_json, const struct qscheme *s,
		       int accuracy, int with_broken)
{
	struct model m;
	struct model_opts mo = { 0 };
	struct err e;
	char name[32] = "bf16+b16";
	if (s)
		qscheme_name(s, name, sizeof name);
	/* mt: the same model tiled for int8 activations, or for bf16 ones
	 * (lib/model/model.h); m keeps the layout that float inputs and the
	 * simulation read. */
	struct model mt;
	if (model_load(&m, dir, &mo, &e) < 0 || (s && model_quantize(&m, s, &e) < 0) ||
	    model_load(&mt, dir, &mo, &e) < 0 || (s && model_quantize(&mt, s, &e) < 0) ||
	    (s ? model_tile(&mt, &e) : model_tile_b16(&mt, &e)) < 0) {
		fprintf(stderr, "%s: %s\n", dir, e.msg);
		exit(1);
	}
	int n, V = m.cfg.vocab_size;
	int *ids = check_golden_ids(ids_json, &n);
	float *act = malloc(sizeof(float) * V), *fl = malloc(sizeof(float) * V),
	      *other = malloc(sizeof(float) * V);
	double *sim = malloc(sizeof(double) * V);
	enum cpu_level top = cpu_level_env(NULL);

	engine(&mt, ids, n, 1, 1, 64, top, act);
	engine(&m, ids, n, 0, 1, 64, top, fl);
	if (accuracy) {
		min_margin = min_margin_b16 = 1;
		sim_b16 = !s;
		simulate(&m, ids, n, 0, sim);
		sim_b16 = 0;
		double ds = max_diff(act, sim, V), df = max_diff(fl, sim, V);
		printf("%s: %s %s: engine vs simulation %.3g (closest rounding call %.2g %s), "
		       "without them %.3g", s ? "act8" : "b16", dir, name, ds,
		       s ? min_margin : min_margin_b16, s ? "codes" : "bf16 spacings", df);
		CHECK(ds < SIM_TOL, "%s %s: logits differ by %g from the simulation", dir,
		      name, ds);
		CHECK(df > 10 * SIM_TOL, "%s %s: without its activations only %g from the "
		      "simulation: the test cannot tell", dir, name, df);
	}
	if (with_broken) {
		simulate(&m, ids, n, 1, sim);
		double db = max_diff(act, sim, V);
		printf(", misplaced scales %.3g", db);
		CHECK(db > 10 * SIM_TOL, "%s %s: a misplaced scale is only %g away", dir, name, db);
	}
	if (accuracy)
		printf("\n");

	/* Threads, chunking and level change no bit. */
	struct { int threads, batch; enum cpu_level level; } v[] = {
		{ 2, 64, top }, { 2, 5, top }, { 1, 1, top }, { 2, 3, CPU_SCALAR },
		{ 1, 64, top >= CPU_AVX2 ? CPU_AVX2 : CPU_SCALAR },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		engine(&mt, ids, n, 1, v[i].threads, v[i].batch, v[i].level, other);
		CHECK(!memcmp(act, other, sizeof(float) * V),
		      "%s %s: %d threads, batch %d, %s: not bitwise equal", dir, name,
		      v[i].threads, v[i].batch, cpu_level_name(v[i].level));
	}
	free(act), free(fl), free(other), free(sim), free(ids);
	model_free(&m);
	model_free(&mt);
}

/* A model with no integer matrix refuses act8. */
static void check_float_refused(void)
{
	struct model m;
	struct model_opts mo = { 0 };
	struct forward f;
	struct forward_opts o = { .threads = 1, .ctx = 8, .act8 = 1 };
	struct err e;
	if (model_load(&m, "tests/fixtures/qwen-shapes", &mo, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		exit(1);
	}
	CHECK(!forward_has_int_weights(&m), "a bf16 model has integer weights");
	CHECK(forward_init(&f, &m, &o, &e) < 0 &&
	      !strcmp(e.msg, "int8 activations need int8 or int4 weights; the model has none"),
	      "act8 on a bf16 model: not refused");
	model_free(&m);
}

int main(void)
{
	printf("activations: %s%s%s\n", cpu_level_name(cpu_level_env(NULL)),
	       kern_has_vnni() && cpu_level_env(NULL) == CPU_AVX512 ? " + VNNI" : " (no VNNI)",
	       kern_has_dpbf16() ? " + vdpbf16ps" : " (no vdpbf16ps: the scalar bf16 reference)");
	struct qscheme int8 = { .type = WT_Q8 },
		       int4e = { .type = WT_Q4, .group_size = 32, .embeddings = true };
	const char *tiny = "data/shakespeare-tiny", *tiny_ids =
		"tests/golden/shakespeare-tiny/citizen.json", *shapes = "tests/fixtures/qwen-shapes",
		*shapes_ids = "tests/golden/qwen-shapes/rand33.json";
	check_case(tiny, tiny_ids, &int8, 1, 1);
	check_case(tiny, tiny_ids, &int4e, 1, 0);
	check_case(shapes, shapes_ids, &int8, 1, 0);
	check_float_refused();
	check_case(tiny, tiny_ids, NULL, 1, 0);
	check_case(shapes, shapes_ids, NULL, 0, 0);
	return check_done("activations");
}
