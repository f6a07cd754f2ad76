/* sampler: see sampler.h. */
#include "sample/sampler.h"
#include "sample/introsort.h"
#include "kernels/kernels.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sampler {
	int n_vocab;
	struct sampler_cand *cand; /* [n_vocab] the kept tokens (sampler_kept) */
	int n_cand;
	const struct kernels *k;   /* softmax: the same bits on every ISA */
	float *work;               /* [n_vocab] logits after penalty, temperature */
	float *prob;               /* [n_vocab] softmax and heap scratch */
	int32_t *ctx;              /* [n_vocab] distinct context ids, in order seen */
	int n_ctx;
	unsigned char *seen;       /* [n_vocab] 1 if the id is in ctx */
	struct introsort_item *sortbuf; /* [n_vocab] for resolve_tie */
	float *saved;              /* [n_vocab] logits before the penalty */
	struct sampler_cand *heap; /* [n_vocab] top-k selection */
};

struct sampler *sampler_new(int n_vocab, struct err *e)
{
	if (n_vocab <= 0) {
		err_set(e, "sampler: bad vocabulary size %d", n_vocab);
		return NULL;
	}
	struct sampler *s = calloc(1, sizeof *s);
	if (!s) {
		err_set(e, "out of memory");
		return NULL;
	}
	size_t n = (size_t)n_vocab;
	s->n_vocab = n_vocab;
	s->k = kernels_for(cpu_level_env(NULL));
	s->cand = malloc(n * sizeof *s->cand);
	s->work = malloc(n * sizeof *s->work);
	s->prob = malloc(n * sizeof *s->prob);
	s->ctx = malloc(n * sizeof *s->ctx);
	s->seen = calloc(n, 1);
	s->sortbuf = malloc(n * sizeof *s->sortbuf);
	s->saved = malloc(n * sizeof *s->saved);
	s->heap = malloc(n * sizeof *s->heap);
	if (!s->cand || !s->work || !s->prob || !s->ctx || !s->seen ||
	    !s->sortbuf || !s->saved || !s->heap) {
		sampler_free(s);
		err_set(e, "out of memory (sampler for %d tokens)", n_vocab);
		return NULL;
	}
	return s;
}

void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	free(s->cand);
	free(s->work);
	free(s->prob);
	free(s->ctx);
	free(s->seen);
	free(s->sortbuf);
	free(s->saved);
	free(s->heap);
	free(s);
}

double sampler_f32_decimal(float f)
{
	char buf[32];
	for (int prec = 1; prec <= 9; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, f);
		double d = strtod(buf, NULL);
		if ((float)d == f)
			return d;
	}
	return f; /* NaN, inf */
}

static int check_range(const char *name, double v, double lo, double hi,
		       struct err *e)
{
	if (!isfinite(v) || v < lo || v > hi)
		return err_set(e, "%s: %g is out of range [%g, %g]", name, v, lo, hi);
	return 0;
}

int sampler_params_f32(struct sampler_params *p, float temperature, int top_k, float top_p,
		       float min_p, float repetition_penalty,
		       const struct sampler_params *over, struct err *e)
{
	*p = (struct sampler_params){
		.temperature = sampler_f32_decimal(temperature),
		.top_k = top_k,
		.top_p = sampler_f32_decimal(top_p),
		.min_p = sampler_f32_decimal(min_p),
		.repetition_penalty = sampler_f32_decimal(repetition_penalty),
	};
	if (over)
		sampler_params_override(p, over);
	return sampler_params_check(p, e);
}

void sampler_params_override(struct sampler_params *p, const struct sampler_params *over)
{
	if (!isnan(over->temperature))
		p->temperature = over->temperature;
	if (over->top_k >= 0)
		p->top_k = over->top_k;
	if (!isnan(over->top_p))
		p->top_p = over->top_p;
	if (!isnan(over->min_p))
		p->min_p = over->min_p;
	if (!isnan(over->repetition_penalty))
		p->repetition_penalty = over->repetition_penalty;
}

int sampler_params_check(const struct sampler_params *p, struct err *e)
{
	/* The chain computes in float32: a value that is not a finite float
	 * would turn finite logits into inf or NaN. */
	if (check_range("temperature", p->temperature, 0, FLT_MAX, e) < 0 ||
	    check_range("top_p", p->top_p, 0, 1, e) < 0 ||
	    check_range("min_p", p->min_p, 0, 1, e) < 0)
		return -1;
	if (p->top_k < 0)
		return err_set(e, "top_k: %d is negative", p->top_k);
	if (check_range("repetition_penalty", p->repetition_penalty, FLT_TRUE_MIN,
			FLT_MAX, e) < 0)
		return -1;
	return 0;
}

void sampler_clear_context(struct sampler *s)
{
	for (int i = 0; i < s->n_ctx; i++)
		s->seen[s->ctx[i]] = 0;
	s->n_ctx = 0;
}

int sampler_add_context(struct sampler *s, const int32_t *ids, long n,
			struct err *e)
{
	for (long i = 0; i < n; i++) {
		int32_t id = ids[i];
		if (id < 0 || id >= s->n_vocab)
			return err_set(e, "context id %d outside the vocabulary "
				       "(%d tokens)", id, s->n_vocab);
		if (!s->seen[id]) {
			s->seen[id] = 1;
			s->ctx[s->n_ctx++] = id;
		}
	}
	return 0;
}

/* The largest of x[0..n) and whether any is NaN, with four independent
 * maxima so the loop is not one long dependency chain. */
static float max_of(const float *x, int n, int *nan)
{
	float m[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
	int bad = 0, i = 0;
	for (; i + 4 <= n; i += 4)
		for (int j = 0; j < 4; j++) {
			float v = x[i + j];
			bad |= v != v;
			m[j] = v > m[j] ? v : m[j];
		}
	for (; i < n; i++) {
		bad |= x[i] != x[i];
		m[0] = x[i] > m[0] ? x[i] : m[0];
	}
	*nan = bad;
	float a = m[0] > m[1] ? m[0] : m[1], b = m[2] > m[3] ? m[2] : m[3];
	return a > b ? a : b;
}

/* Sum of n floats in double, eight running sums folded in a fixed order. */
static double sum_double(const float *x, int n)
{
	double s[8] = { 0 };
	int i = 0;
	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			s[j] += x[i + j];
	for (; i < n; i++)
		s[0] += x[i];
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* Step 1, in place: penalizes the context's logits, keeping the old values
 * in s->saved for unpenalize(). */
static void penalize(struct sampler *s, float *logits, float pen)
{
	for (int i = 0; i < s->n_ctx; i++) {
		int id = s->ctx[i];
		float v = logits[id];
		s->saved[i] = v;
		logits[id] = v < 0 ? v * pen : v / pen;
	}
}

static void unpenalize(struct sampler *s, float *logits)
{
	for (int i = 0; i < s->n_ctx; i++)
		logits[s->ctx[i]] = s->saved[i];
}

/* Step 2 over the whole vocabulary: w = x / t. */
static void scale(float *restrict w, const float *restrict x, int n, float t)
{
	/* Four at a time (SSE, on every x86-64): each quotient is the
	 * correctly rounded one either way. */
	typedef float v4 __attribute__((vector_size(16)));
	v4 tv = { t, t, t, t };
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		v4 a;
		memcpy(&a, x + i, sizeof a);
		a = a / tv;
		memcpy(w + i, &a, sizeof a);
	}
	for (; i < n; i++)
		w[i] = x[i] / t;
}

/* Heap order for selecting the largest: a is "below" b when its logit is
 * smaller, or equal with a higher id (so ties keep the lower ids). */
static int below(const struct sampler_cand *a, const struct sampler_cand *b)
{
	return a->x < b->x || (a->x == b->x && a->id > b->id);
}

static void sift_down(struct sampler_cand *h, int k, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < k && below(&h[l], &h[m]))
			m = l;
		if (r < k && below(&h[r], &h[m]))
			m = r;
		if (m == i)
			return;
		struct sampler_cand t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* The k largest of x[0..n) into the min-heap h[0..k): h[0] is the k-th
 * largest. One pass; most elements cost one comparison. */
static void heap_select(const float *x, int n, int k, struct sampler_cand *h)
{
	for (int i = 0; i < k; i++)
		h[i] = (struct sampler_cand){ .id = i, .x = x[i] };
	for (int i = k / 2 - 1; i >= 0; i--)
		sift_down(h, k, i);
	for (int i = k; i < n; i++)
		if (x[i] > h[0].x) {
			h[0] = (struct sampler_cand){ .id = i, .x = x[i] };
			sift_down(h, k, 0);
		}
}

/* Descending logit, and among equal logits ascending id. (Where equal
 * logits straddle the top-p cut, resolve_tie() puts the right ones in.) */
static int cmp_desc_id_asc(const void *pa, const void *pb)
{
	const struct sampler_cand *a = pa, *b = pb;
	if (a->x != b->x)
		return a->x < b->x ? 1 : -1;
	return a->id > b->id ? 1 : -1;
}

/* Appends to s->cand every token with lo <= x < hi and x > -inf, in id
 * order; returns the new count. */
static int collect(struct sampler *s, const float *x, float lo, float hi, int n)
{
	for (int i = 0; i < s->n_vocab; i++)
		if (x[i] >= lo && x[i] < hi && x[i] > -INFINITY)
			s->cand[n++] = (struct sampler_cand){ .id = i, .x = x[i] };
	return n;
}

/* Softmax over the candidates' logits into their p. */
static void cand_softmax(struct sampler *s)
{
	int n = s->n_cand;
	for (int i = 0; i < n; i++)
		s->prob[i] = s->cand[i].x;
	s->k->softmax(s->prob, n);
	for (int i = 0; i < n; i++)
		s->cand[i].p = s->prob[i];
}

/* The top-p walk over cand[from..n), which continue a descending order
 * whose probabilities above `from` add up to *above. Returns the index of
 * the first removed token, or -1 when all of them stay. */
static int top_p_walk(const struct sampler *s, int from, int n, double total,
		      float thr, double *above)
{
	for (int r = from; r < n; r++) {
		/* cand[r]'s cumulative probability in ascending order. */
		if (r > 0 && (float)(total - *above) <= thr)
			return r;
		*above += s->cand[r].p;
	}
	return -1;
}

/* Where the cut falls inside a run of equal logits (cand[cut - 1].x ==
 * cand[cut].x), which of them transformers keeps depends on where torch's
 * sort leaves each: rebuild the tensor top-p sorted (the logits of the
 * tokens still in, -inf for the others), sort it exactly as torch does, and
 * keep the run's members that it puts last. How many are kept does not
 * depend on the order, only which ones. n_in: the tokens in before top-p
 * (cand[0..n_in) when !all, else every token). */
static void resolve_tie(struct sampler *s, const float *x, int all, int n_in,
			int cut)
{
	float v = s->cand[cut].x;
	int first = cut;
	while (first > 0 && s->cand[first - 1].x == v)
		first--;
	struct introsort_item *a = s->sortbuf;
	int nv = s->n_vocab;
	for (int i = 0; i < nv; i++)
		a[i] = (struct introsort_item){ .v = all ? x[i] : -INFINITY, .i = i };
	for (int j = 0; !all && j < n_in; j++)
		a[s->cand[j].id].v = s->cand[j].x;
	introsort(a, nv);
	/* The run is contiguous in the sorted tensor; its last cut - first
	 * members are the kept ones. */
	int end = nv;
	while (a[end - 1].v != v)
		end--;
	for (int j = first; j < cut; j++)
		s->cand[j].id = a[--end].i;
}

/* Top-p over the whole vocabulary: softmax over all of it, then only the
 * tokens within `window` nats of the largest logit are sorted; the window
 * widens until the cut falls inside it. */
static void top_p_full(struct sampler *s, const float *x, float m, float thr)
{
	int nv = s->n_vocab;
	memcpy(s->prob, x, (size_t)nv * sizeof *s->prob);
	s->k->softmax(s->prob, nv);
	double total = sum_double(s->prob, nv), above = 0;
	float hi = INFINITY;
	int n = 0;
	for (float window = 8;; window *= 4) {
		float lo = window > 128 ? -INFINITY : m - window;
		int from = n;
		n = collect(s, x, lo, hi, n);
		for (int i = from; i < n; i++)
			s->cand[i].p = s->prob[s->cand[i].id];
		qsort(s->cand + from, (size_t)(n - from), sizeof *s->cand,
		      cmp_desc_id_asc);
		int cut = top_p_walk(s, from, n, total, thr, &above);
		if (cut >= 0 && s->cand[cut].x == s->cand[cut - 1].x)
			resolve_tie(s, x, 1, nv, cut);
		if (cut >= 0 || lo == -INFINITY) {
			s->n_cand = cut >= 0 ? cut : n;
			return;
		}
		hi = lo;
	}
}

static void top_p_list(struct sampler *s, float thr)
{
	cand_softmax(s);
	qsort(s->cand, (size_t)s->n_cand, sizeof *s->cand, cmp_desc_id_asc);
	double total = 0, above = 0;
	for (int i = s->n_cand - 1; i >= 0; i--) /* ascending, as torch adds */
		total += s->cand[i].p;
	int cut = top_p_walk(s, 0, s->n_cand, total, thr, &above);
	if (cut >= 0 && s->cand[cut].x == s->cand[cut - 1].x)
		resolve_tie(s, NULL, 0, s->n_cand, cut);
	if (cut >= 0)
		s->n_cand = cut;
}

static void min_p_list(struct sampler *s, double min_p)
{
	cand_softmax(s);
	float pmax = 0;
	for (int i = 0; i < s->n_cand; i++)
		pmax = s->cand[i].p > pmax ? s->cand[i].p : pmax;
	float lim = (float)min_p * pmax;
	int n = 0;
	for (int i = 0; i < s->n_cand; i++)
		if (!(s->cand[i].p < lim))
			s->cand[n++] = s->cand[i];
	s->n_cand = n;
}

/* The logit below which a token cannot be among the k largest once r is
 * the k-th so far: r itself, less a margin when dividing by t could round
 * a slightly smaller logit onto r / t. */
static float top_k_floor(float r, float t)
{
	return t == 1.0f ? r : r - fabsf(r) * 0x1p-20f;
}

/* Steps 2 and 3 in one pass over the vocabulary: a min-heap of the k
 * largest so far (s->heap), and every token at or above its floor recorded
 * in s->cand (a superset of the final top k, in id order). Then only the
 * recorded ones are divided by t and compared with the k-th largest / t,
 * transformers' rule. Sets *bad when a logit is NaN or a quotient is +inf
 * (a +inf logit, or one that dividing by t overflows). */
static void top_k(struct sampler *s, const float *x, int k, float t, int *bad)
{
	struct sampler_cand *h = s->heap, *c = s->cand;
	int nv = s->n_vocab, n = 0, nan = 0;
	for (int i = 0; i < k; i++) {
		nan |= x[i] != x[i];
		h[i] = c[n++] = (struct sampler_cand){ .id = i, .x = x[i] };
	}
	for (int i = k / 2 - 1; i >= 0; i--)
		sift_down(h, k, i);
	float lo = top_k_floor(h[0].x, t);
	for (int i = k; i < nv; i++) {
		/* Most blocks of 16 hold nothing at or above the floor (nor a
		 * NaN): one vectorizable test skips them. */
		if ((i & 15) == 0 && i + 16 <= nv) {
			int any = 0;
			for (int j = 0; j < 16; j++)
				any |= !(x[i + j] < lo);
			if (!any) {
				i += 15;
				continue;
			}
		}
		float v = x[i];
		nan |= v != v;
		if (v >= lo) {
			c[n++] = (struct sampler_cand){ .id = i, .x = v };
			if (v > h[0].x) {
				h[0] = c[n - 1];
				sift_down(h, k, 0);
				lo = top_k_floor(h[0].x, t);
			}
		}
	}
	float kth = h[0].x / t;
	int kept = 0;
	for (int i = 0; i < n; i++) {
		float v = c[i].x / t;
		nan |= v == INFINITY;
		if (v >= kth && v > -INFINITY)
			c[kept++] = (struct sampler_cand){ .id = c[i].id, .x = v };
	}
	s->n_cand = kept;
	*bad = nan;
}

/* The first NaN or +inf of logits[0..n), or -1 when there is none. */
static int first_bad(const float *logits, int n)
{
	for (int i = 0; i < n; i++)
		if (isnan(logits[i]) || logits[i] == INFINITY)
			return i;
	return -1;
}

/* Temperature 0: the argmax of the penalized logits, the lowest id on ties
 * (transformers' greedy search). With ties set, the limit of a temperature
 * so small that dividing by it overflows, which is the limit of the
 * softmax of x / t as t -> 0+: every id tied at the largest penalized
 * logit, with equal probability (a logit that the penalty itself overflows
 * to +inf ranks above every finite one). */
static int greedy(struct sampler *s, float *logits, float pen, int ties, struct err *e)
{
	int nv = s->n_vocab, bad;
	int penalized = pen != 1.0f && s->n_ctx > 0;
	if (penalized)
		penalize(s, logits, pen);
	float m = max_of(logits, nv, &bad);
	int n = 0;
	for (int i = 0; i < nv && (ties || n == 0); i++)
		if (logits[i] == m)
			s->cand[n++] = (struct sampler_cand){ .id = i, .x = m };
	if (penalized)
		unpenalize(s, logits);
	int b = bad || m == INFINITY ? first_bad(logits, nv) : -1;
	if (b >= 0)
		return err_set(e, "logit %d is %s", b, isnan(logits[b]) ? "nan" : "inf");
	if (m == -INFINITY)
		return err_set(e, "no logit is finite");
	for (int i = 0; i < n; i++)
		s->cand[i].p = 1.0f / (float)n;
	s->n_cand = n;
	return n;
}

int sampler_filter(struct sampler *s, float *logits,
		   const struct sampler_params *p, struct err *e)
{
	int nv = s->n_vocab, bad;
	float t = (float)p->temperature, pen = (float)p->repetition_penalty;
	if (t == 0)
		return greedy(s, logits, pen, 0, e);
	int penalized = pen != 1.0f && s->n_ctx > 0;
	if (penalized)
		penalize(s, logits, pen);
	if (p->top_k > 0 && p->top_k < nv) {
		top_k(s, logits, p->top_k, t, &bad);
		if (penalized)
			unpenalize(s, logits);
		/* A bad logit, or every quotient overflowed one way: */
		if (bad || s->n_cand == 0)
			return greedy(s, logits, pen, 1, e);
		if (p->top_p < 1)
			top_p_list(s, (float)(1 - p->top_p));
		if (p->min_p > 0)
			min_p_list(s, p->min_p);
		cand_softmax(s);
		return s->n_cand;
	}
	/* No top-k: the warpers see the whole vocabulary, divided by t. */
	const float *x = logits;
	if (t != 1.0f || penalized) {
		if (t != 1.0f)
			scale(s->work, logits, nv, t);
		else
			memcpy(s->work, logits, (size_t)nv * sizeof *s->work);
		x = s->work;
	}
	if (penalized)
		unpenalize(s, logits);
	float m = max_of(x, nv, &bad);
	if (bad || isinf(m))
		return greedy(s, logits, pen, 1, e);
	if (p->top_p < 1) {
		top_p_full(s, x, m, (float)(1 - p->top_p));
		if (p->min_p > 0)
			min_p_list(s, p->min_p);
	} else if (p->min_p > 0) {
		/* Tokens more than 1 nat below log(min_p) under the largest are
		 * certainly removed: no need to look at them. */
		s->n_cand = collect(s, x, m + logf((float)p->min_p) - 1, INFINITY, 0);
		min_p_list(s, p->min_p);
	} else {
		s->n_cand = collect(s, x, -INFINITY, INFINITY, 0);
	}
	cand_softmax(s);
	return s->n_cand;
}

int32_t sampler_pick(const struct sampler *s, double u)
{
	double total = 0;
	for (int i = 0; i < s->n_cand; i++)
		total += s->cand[i].p;
	double target = u * total, cum = 0;
	for (int i = 0; i < s->n_cand; i++) {
		cum += s->cand[i].p;
		if (target < cum)
			return s->cand[i].id;
	}
	/* Rounding put the target past the end: the last token with mass. */
	int i = s->n_cand - 1;
	while (i > 0 && s->cand[i].p == 0)
		i--;
	return s->cand[i].id;
}

int32_t sampler_next(struct sampler *s, float *logits,
		     const struct sampler_params *p, struct rng *r, struct err *e)
{
	if (sampler_filter(s, logits, p, e) < 0)
		return -1;
	if (p->temperature == 0)
		return s->cand[0].id;
	return sampler_pick(s, rng_uniform(r));
}

void sampler_top(struct sampler *s, const float *logits, int k,
		 struct sampler_cand *out)
{
	heap_select(logits, s->n_vocab, k, out);
	qsort(out, (size_t)k, sizeof *out, cmp_desc_id_asc);
}

/* c ranks before d: more probable, or as probable with a lower id. */
static int kept_before(const struct sampler_cand *c, const struct sampler_cand *d)
{
	return c->p > d->p || (c->p == d->p && c->id < d->id);
}

int sampler_kept_top(const struct sampler *s, int k, struct sampler_cand *out)
{
	int n = 0;
	for (int i = 0; i < s->n_cand; i++) {
		const struct sampler_cand *c = &s->cand[i];
		if (n == k && !kept_before(c, &out[k - 1]))
			continue;
		int j = n < k ? n++ : k - 1;
		while (j > 0 && kept_before(c, &out[j - 1])) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = *c;
	}
	return n;
}

double sampler_logsumexp(struct sampler *s, const float *logits)
{
	int n = s->n_vocab, nan;
	float m = max_of(logits, n, &nan);
	if (nan || !isfinite(m))
		return nan ? NAN : m;
	/* One SIMD softmax: p[i] = e[i] / z, z its float32 sum of the
	 * e[i] = exp(x[i] - m). The largest logit's p is exp(0) / z = 1 / z,
	 * and the p, added in double, are sum(e) / z: together the sum, free
	 * of the float32 sum's rounding. */
	int i = 0;
	while (logits[i] != m)
		i++;
	memcpy(s->prob, logits, (size_t)n * sizeof *s->prob);
	s->k->softmax(s->prob, n);
	return (double)m - log((double)s->prob[i]) + log(sum_double(s->prob, n));
}

int sampler_n_vocab(const struct sampler *s)
{
	return s->n_vocab;
}

const struct sampler_cand *sampler_kept(const struct sampler *s, int *n)
{
	*n = s->n_cand;
	return s->cand;
}

int sampler_n_context(const struct sampler *s)
{
	return s->n_ctx;
}
