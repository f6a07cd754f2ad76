/* The sampler against transformers' logits processors
 * (tests/golden/sampler-warpers.jsonl), the generator against published
 * and independently computed outputs, and the draw against its
 * distribution (chi-square). */
#include "check.h"
#include "core/rng.h"
#include "sample/sampler.h"

#include <cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN "tests/golden/sampler-warpers.jsonl"

static void test_rng(void)
{
	/* splitmix64 from state 0: the first output is the published one; the
	 * others and the xoshiro256** outputs come from an independent Python
	 * implementation of the reference C code. */
	uint64_t st = 0;
	uint64_t sm[4] = { 0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
			   0x06c45d188009454full, 0xf88bb8a8724c81ecull };
	for (int i = 0; i < 4; i++) {
		uint64_t v = rng_splitmix64(&st);
		CHECK(v == sm[i], "splitmix64 output %d: %016llx, want %016llx", i,
		      (unsigned long long)v, (unsigned long long)sm[i]);
	}
	struct rng r = { .s = { 1, 2, 3, 4 } };
	uint64_t xo[5] = { 0x2d00, 0, 0x5a007080, 0x10e0000000009d80ull,
			   0x10e0b61ce1009d80ull };
	for (int i = 0; i < 5; i++) {
		uint64_t v = rng_next(&r);
		CHECK(v == xo[i], "xoshiro256** from {1,2,3,4}, output %d: %llx, "
		      "want %llx", i, (unsigned long long)v, (unsigned long long)xo[i]);
	}
	rng_seed(&r, 42);
	uint64_t s42[3] = { 0x15780b2e0c2ec716ull, 0x6104d9866d113a7eull,
			    0xae17533239e499a1ull };
	for (int i = 0; i < 3; i++) {
		uint64_t v = rng_next(&r);
		CHECK(v == s42[i], "seed 42, output %d: %llx, want %llx", i,
		      (unsigned long long)v, (unsigned long long)s42[i]);
	}
	rng_seed(&r, 7);
	double lo = 1, hi = 0;
	for (int i = 0; i < 100000; i++) {
		double u = rng_uniform(&r);
		lo = u < lo ? u : lo;
		hi = u > hi ? u : hi;
	}
	CHECK(lo >= 0 && lo < 1e-3 && hi < 1 && hi > 1 - 1e-3,
	      "uniform range [%g, %g]", lo, hi);
}

/* Python's json writes -Infinity, which is not JSON: turn it into a number
 * that strtod reads as -inf, in place (same length). */
static void fix_infinity(char *line)
{
	char *p = line;
	while ((p = strstr(p, "-Infinity")))
		memcpy(p, "-1e999   ", 9);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Runs one golden case; returns 1 when it agrees, else 0 with why[] set. */
static int golden_case(cJSON *c, char *why, size_t whylen, double *maxdiff)
{
	cJSON *params = cJSON_GetObjectItem(c, "params");
	cJSON *logits = cJSON_GetObjectItem(c, "logits");
	cJSON *ctxj = cJSON_GetObjectItem(c, "context_ids");
	cJSON *kept = cJSON_GetObjectItem(c, "kept");
	cJSON *probs = cJSON_GetObjectItem(c, "probs");
	int n = cJSON_GetArraySize(logits);
	struct sampler_params p = {
		.temperature = cJSON_GetObjectItem(params, "temperature")->valuedouble,
		.top_k = cJSON_GetObjectItem(params, "top_k")->valueint,
		.top_p = cJSON_GetObjectItem(params, "top_p")->valuedouble,
		.min_p = cJSON_GetObjectItem(params, "min_p")->valuedouble,
		.repetition_penalty =
			cJSON_GetObjectItem(params, "repetition_penalty")->valuedouble,
	};
	float *x = malloc((size_t)n * sizeof *x);
	int nctx = cJSON_GetArraySize(ctxj);
	int32_t *ctx = malloc((size_t)(nctx + 1) * sizeof *ctx);
	int nk = cJSON_GetArraySize(kept);
	int *want = malloc((size_t)(nk + 1) * sizeof *want);
	double *wantp = malloc((size_t)(nk + 1) * sizeof *wantp);
	int i = 0;
	cJSON *it;
	cJSON_ArrayForEach(it, logits)
		x[i++] = (float)it->valuedouble;
	i = 0;
	cJSON_ArrayForEach(it, ctxj)
		ctx[i++] = it->valueint;
	i = 0;
	cJSON_ArrayForEach(it, kept)
		want[i++] = it->valueint;
	i = 0;
	cJSON_ArrayForEach(it, probs)
		wantp[i++] = it->valuedouble;

	struct err e;
	struct sampler *s = sampler_new(n, &e);
	int ok = 0;
	if (!s || sampler_add_context(s, ctx, nctx, &e) < 0 ||
	    sampler_filter(s, x, &p, &e) < 0) {
		snprintf(why, whylen, "error: %.400s", e.msg);
		goto out;
	}
	int n_cand;
	const struct sampler_cand *cand = sampler_kept(s, &n_cand);
	int *got = malloc((size_t)n_cand * sizeof *got);
	for (i = 0; i < n_cand; i++)
		got[i] = cand[i].id;
	qsort(got, (size_t)n_cand, sizeof *got, cmp_int);
	int same = n_cand == nk;
	for (i = 0; same && i < nk; i++)
		same = got[i] == want[i];
	if (!same) {
		int first = 0;
		while (first < nk && first < n_cand && got[first] == want[first])
			first++;
		snprintf(why, whylen, "kept %d tokens, want %d; first difference "
			 "at rank %d: got %d, want %d (k=%d p=%g min_p=%g T=%g rp=%g, "
			 "n=%d)", n_cand, nk, first,
			 first < n_cand ? got[first] : -1,
			 first < nk ? want[first] : -1, p.top_k, p.top_p, p.min_p,
			 p.temperature, p.repetition_penalty, n);
		free(got);
		goto out;
	}
	free(got);
	ok = 1;
	for (i = 0; i < n_cand; i++) {
		int id = cand[i].id;
		int *w = bsearch(&id, want, (size_t)nk, sizeof *want, cmp_int);
		double d = fabs(cand[i].p - wantp[w - want]);
		*maxdiff = d > *maxdiff ? d : *maxdiff;
		if (!(d <= 1e-6) && ok) {
			snprintf(why, whylen, "token %d: probability %.9g, want %.9g",
				 id, cand[i].p, wantp[w - want]);
			ok = 0;
		}
	}
out:
	sampler_free(s);
	free(x);
	free(ctx);
	free(want);
	free(wantp);
	return ok;
}

static void test_golden(void)
{
	FILE *f = fopen(GOLDEN, "r");
	CHECK(f != NULL, "%s: cannot open", GOLDEN);
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	int n = 0, agree = 0, first_bad = -1;
	char why[512] = "", first_why[512] = "";
	double maxdiff = 0;
	while (getline(&line, &cap, f) > 0) {
		n++;
		fix_infinity(line);
		cJSON *c = cJSON_Parse(line);
		if (!c) {
			snprintf(why, sizeof why, "line does not parse");
		} else if (golden_case(c, why, sizeof why, &maxdiff)) {
			agree++;
		}
		if (agree != n && first_bad < 0) {
			first_bad = n;
			memcpy(first_why, why, sizeof why);
		}
		cJSON_Delete(c);
	}
	free(line);
	fclose(f);
	printf("sampler-warpers: %d of %d cases agree (largest probability "
	       "difference %.3g)\n", agree, n, maxdiff);
	if (first_bad > 0)
		printf("first disagreement: line %d: %s\n", first_bad, first_why);
	CHECK(n == 400 && agree == n, "%d of %d golden cases agree", agree, n);
}

/* Chi-square goodness of fit of the draw on a fixed distribution. With 5
 * categories (4 degrees of freedom) P(chi2 > x) = exp(-x/2) (1 + x/2),
 * which is 7.5e-7 at x = 34: a correct sampler fails less than once in a
 * million seeds. */
static void test_draw(void)
{
	const double want[5] = { 0.5, 0.25, 0.125, 0.0625, 0.0625 };
	float x[5];
	for (int i = 0; i < 5; i++)
		x[i] = (float)log(want[i]) + 3; /* softmax ignores the shift */
	struct sampler_params p = { .temperature = 1, .top_p = 1,
				    .repetition_penalty = 1 };
	struct err e;
	struct sampler *s = sampler_new(5, &e);
	struct rng r;
	rng_seed(&r, 12345);
	enum { N = 200000 };
	long count[5] = { 0 };
	int bad = 0;
	for (int i = 0; i < N; i++) {
		int32_t id = sampler_next(s, x, &p, &r, &e);
		if (id < 0 || id >= 5)
			bad++;
		else
			count[id]++;
	}
	double chi2 = 0;
	for (int i = 0; i < 5; i++) {
		double ex = N * want[i];
		chi2 += (count[i] - ex) * (count[i] - ex) / ex;
	}
	printf("draw: chi-square %.2f over %d draws (bound 34, 4 degrees of "
	       "freedom)\n", chi2, N);
	CHECK(bad == 0 && chi2 < 34, "chi-square %.2f >= 34 (counts %ld %ld %ld "
	      "%ld %ld)", chi2, count[0], count[1], count[2], count[3], count[4]);

	/* With top-k 2 only the two largest come out, in ratio 2:1. */
	p.top_k = 2;
	long c2[5] = { 0 };
	for (int i = 0; i < 30000; i++)
		c2[sampler_next(s, x, &p, &r, &e)]++;
	double ex0 = 20000, ex1 = 10000;
	chi2 = (c2[0] - ex0) * (c2[0] - ex0) / ex0 + (c2[1] - ex1) * (c2[1] - ex1) / ex1;
	/* 1 degree of freedom: P(chi2 > 24) = 9.6e-7. */
	CHECK(c2[2] + c2[3] + c2[4] == 0 && chi2 < 24,
	      "top-k 2 draws: %ld %ld %ld %ld %ld (chi-square %.2f)", c2[0], c2[1],
	      c2[2], c2[3], c2[4], chi2);
	sampler_free(s);
}

static void test_greedy_and_errors(void)
{
	struct err e;
	struct sampler *s = sampler_new(6, &e);
	struct sampler_params p = { .temperature = 0, .top_p = 1,
				    .repetition_penalty = 1 };
	float x[6] = { 1, 3, -INFINITY, 3, 2, 0 };
	CHECK(sampler_next(s, x, &p, NULL, &e) == 1, "greedy: lowest id on ties");
	/* The penalty applies to greedy too (as in transformers): 3 / 2 < 2. */
	int32_t ctx[] = { 1, 3, 1 };
	p.repetition_penalty = 2;
	CHECK(sampler_add_context(s, ctx, 3, &e) == 0 && sampler_n_context(s) == 2,
	      "distinct context ids: %d", sampler_n_context(s));
	CHECK(sampler_next(s, x, &p, NULL, &e) == 4, "greedy after the penalty");
	CHECK(x[1] == 3 && x[3] == 3, "the penalty is undone: %g %g", x[1], x[3]);
	p.temperature = 0.5;
	p.top_k = 2;
	CHECK(sampler_filter(s, x, &p, &e) == 3 && x[1] == 3 && x[3] == 3, /* 4, 3, 3 */
	      "top-k after the penalty: logits %g %g", x[1], x[3]);
	p.temperature = 0;
	p.top_k = 0;
	sampler_clear_context(s);
	CHECK(sampler_n_context(s) == 0 && sampler_next(s, x, &p, NULL, &e) == 1,
	      "cleared context");
	int32_t out_of_range = 6;
	CHECK(sampler_add_context(s, &out_of_range, 1, &e) < 0 &&
	      !strcmp(e.msg, "context id 6 outside the vocabulary (6 tokens)"),
	      "context id range: %s", e.msg);
	x[4] = NAN;
	CHECK(sampler_filter(s, x, &p, &e) < 0 && !strcmp(e.msg, "logit 4 is nan"),
	      "NaN logit: %s", e.msg);
	x[4] = INFINITY;
	CHECK(sampler_filter(s, x, &p, &e) < 0 && !strcmp(e.msg, "logit 4 is inf"),
	      "+inf logit: %s", e.msg);
	for (int i = 0; i < 6; i++)
		x[i] = -INFINITY;
	CHECK(sampler_filter(s, x, &p, &e) < 0 && !strcmp(e.msg, "no logit is finite"),
	      "all -inf: %s", e.msg);
	struct sampler_params bad = { .temperature = 1, .top_p = 1.5,
				      .repetition_penalty = 1 };
	CHECK(sampler_params_check(&bad, &e) < 0 &&
	      !strcmp(e.msg, "top_p: 1.5 is out of range [0, 1]"), "%s", e.msg);
	bad.top_p = 1;
	bad.repetition_penalty = 0;
	CHECK(sampler_params_check(&bad, &e) < 0 &&
	      !strcmp(e.msg, "repetition_penalty: 0 is out of range [1.4013e-45, "
		      "3.40282e+38]"), "%s", e.msg);
	/* Values that are finite doubles but not finite floats: the chain
	 * computes in float32. */
	bad.repetition_penalty = 1e-300;
	CHECK(sampler_params_check(&bad, &e) < 0 &&
	      !strncmp(e.msg, "repetition_penalty: 1e-300 is out of range", 42), "%s", e.msg);
	bad.repetition_penalty = 1e300;
	CHECK(sampler_params_check(&bad, &e) < 0, "penalty 1e300 accepted");
	bad.repetition_penalty = 1;
	bad.temperature = 1e300;
	CHECK(sampler_params_check(&bad, &e) < 0 &&
	      !strcmp(e.msg, "temperature: 1e+300 is out of range [0, 3.40282e+38]"),
	      "%s", e.msg);
	bad.temperature = FLT_MAX;
	CHECK(sampler_params_check(&bad, &e) == 0, "FLT_MAX refused: %s", e.msg);
	sampler_free(s);
}

/* Temperatures and logits at the float range's edges. Dividing by a
 * temperature so small that a quotient overflows is its limit, greedy
 * (closed form: the softmax of x / t puts all the mass on the largest
 * logit as t -> 0+); a finite logit never reads as a bad one, and a bad
 * one is named by its own index (the vocabulary ends at 5: ASan sees any
 * read past it). */
static void test_float_edges(void)
{
	struct err e;
	struct sampler *s = sampler_new(5, &e);
	CHECK(s != NULL, "sampler_new: %s", e.msg);
	if (!s)
		return;
	const float temps[] = { FLT_TRUE_MIN, 1e-40f, FLT_MIN, 1e-38f, 1e-30f, 0.5f,
				1, FLT_MAX };
	const int ks[] = { 0, 2, 5 };
	const double ps[] = { 1, 0.5 }, mins[] = { 0, 0.1 };
	/* largest first, at several places; ties at the top go to the lower id */
	const float rows[][5] = {
		{ FLT_MAX, FLT_MAX / 2, -FLT_MAX, -INFINITY, 0 },
		{ -INFINITY, 0, 5, 5, -FLT_MAX },
		{ -1, -2, -3, -INFINITY, -FLT_MAX },  /* every quotient -inf */
		{ -FLT_MAX, -INFINITY, -INFINITY, -FLT_MAX, -1e-30f },
		{ FLT_MIN, 1e-44f, 0, -0.0f, -FLT_MIN },
	};
	/* the ids tied at the top: the limit gives each the same share */
	const int top[][5] = { { 1, 0, 0, 0, 0 }, { 0, 0, 1, 1, 0 }, { 1, 0, 0, 0, 0 },
			       { 0, 0, 0, 0, 1 }, { 1, 0, 0, 0, 0 } };
	const int n_top[] = { 1, 2, 1, 1, 1 };
	for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
		for (size_t ti = 0; ti < sizeof temps / sizeof temps[0]; ti++)
			for (size_t ki = 0; ki < 3; ki++)
				for (int pi = 0; pi < 2; pi++)
					for (int mi = 0; mi < 2; mi++) {
		float x[5];
		memcpy(x, rows[r], sizeof x);
		struct sampler_params p = { .temperature = temps[ti], .top_k = ks[ki],
					    .top_p = ps[pi], .min_p = mins[mi],
					    .repetition_penalty = 1 };
		int n = sampler_filter(s, x, &p, &e);
		CHECK(n >= 1, "row %zu t %g k %d: %s", r, temps[ti], ks[ki], e.msg);
		if (n < 1)
			continue;
		CHECK(!memcmp(x, rows[r], sizeof x), "row %zu: logits changed", r);
		int nk;
		const struct sampler_cand *c = sampler_kept(s, &nk);
		double total = 0, mass[5] = { 0 };
		for (int i = 0; i < nk; i++) {
			CHECK(c[i].id >= 0 && c[i].id < 5 && isfinite(c[i].p) && c[i].p >= 0,
			      "row %zu t %g: kept id %d p %g", r, temps[ti], c[i].id, c[i].p);
			total += c[i].p;
			mass[c[i].id] += c[i].p;
		}
		CHECK(fabs(total - 1) < 1e-6, "row %zu t %g: total %g", r, temps[ti], total);
		/* Where the gap under the top is more than ~100 temperatures,
		 * exp(-gap / t) is 0 in float: all the mass is on the top, shared
		 * equally by its ties (top-p 0.5 keeps only one of two). */
		if (temps[ti] <= 1e-30f && (r != 4 || temps[ti] <= 1e-40f) &&
		    !(n_top[r] > 1 && pi == 1))
			for (int i = 0; i < 5; i++)
				CHECK(fabs(mass[i] - (top[r][i] ? 1.0 / n_top[r] : 0)) < 1e-6,
				      "row %zu t %g k %d p %g min %g: id %d has %g", r,
				      temps[ti], ks[ki], ps[pi], mins[mi], i, mass[i]);
	}
	/* A bad logit is named, also when tiny t overflows the others first. */
	float x[5] = { 1, 2, 3, 4, NAN };
	for (size_t ti = 0; ti < sizeof temps / sizeof temps[0]; ti++)
		for (size_t ki = 0; ki < 3; ki++) {
			struct sampler_params p = { .temperature = temps[ti], .top_k = ks[ki],
						    .top_p = 1, .repetition_penalty = 1 };
			x[4] = NAN;
			CHECK(sampler_filter(s, x, &p, &e) < 0 && !strcmp(e.msg, "logit 4 is nan"),
			      "NaN, t %g k %d: %s", temps[ti], ks[ki], e.msg);
			x[4] = INFINITY;
			CHECK(sampler_filter(s, x, &p, &e) < 0 && !strcmp(e.msg, "logit 4 is inf"),
			      "+inf, t %g k %d: %s", temps[ti], ks[ki], e.msg);
		}
	/* A penalty below 1 that overflows a logit: the limit again (that
	 * logit, divided by ~0, is the largest). */
	float y[5] = { 1, 2, 0, -1, -5 };
	int32_t ctx = 0;
	CHECK(sampler_add_context(s, &ctx, 1, &e) == 0, "%s", e.msg);
	struct sampler_params p = { .temperature = 1, .top_p = 1,
				    .repetition_penalty = FLT_TRUE_MIN };
	struct rng r;
	rng_seed(&r, 1);
	CHECK(sampler_next(s, y, &p, &r, &e) == 0, "penalty overflow: %s", e.msg);
	p.temperature = 0;
	CHECK(sampler_next(s, y, &p, NULL, &e) == 0, "penalty overflow, greedy: %s", e.msg);
	sampler_free(s);
}

/* log-sum-exp against transformers' (float64) for the real logits of
 * shakespeare-tiny on "ROMEO:", and a closed form. */
static void test_logsumexp(void)
{
	const char *path = "tests/golden/shakespeare-tiny/romeo.last.f32";
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL, "%s: cannot open", path);
	if (!f)
		return;
	enum { V = 151936 };
	float *x = malloc(sizeof *x * V);
	CHECK(fread(x, 4, V, f) == V, "%s: short", path);
	fclose(f);
	struct err e;
	struct sampler *s = sampler_new(V, &e);
	double lse = sampler_logsumexp(s, x);
	CHECK(fabs(lse - 10.929408073425293) < 1e-6, "logsumexp %.9f, want 10.929408073 "
	      "(golden romeo.json)", lse);
	sampler_free(s);
	free(x);
	float y[4] = { 1, 2, 3, -INFINITY };
	s = sampler_new(4, &e);
	lse = sampler_logsumexp(s, y);
	double want = log(exp(1) + exp(2) + exp(3));
	CHECK(fabs(lse - want) < 1e-6, "logsumexp(1, 2, 3, -inf) = %.9f, want %.9f", lse, want);
	sampler_free(s);
}

int main(void)
{
	test_rng();
	test_greedy_and_errors();
	test_float_edges();
	test_golden();
	test_draw();
	test_logsumexp();
	return check_done("test_sampler");
}
