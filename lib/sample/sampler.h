/* sampler: the next token from a row of logits, chosen exactly as
 * HuggingFace transformers' logits processors would choose its candidates.
 *
 * The chain, in transformers' order (each step sees the previous one's
 * output; a removed token is -inf from then on):
 *
 *  1. repetition penalty over every distinct id of the context (the prompt
 *     and everything generated): a logit < 0 is multiplied by the penalty,
 *     any other divided by it (float32 arithmetic, as torch does);
 *  2. temperature: every logit divided by it (float32);
 *  3. top-k: keeps every token whose logit is >= the k-th largest, so ties
 *     with the k-th are all kept (torch.topk + "<" as in TopKLogitsWarper);
 *  4. top-p: softmax, sort ascending, cumulative sum of the float32
 *     probabilities accumulated in double and rounded to float32 at each
 *     step (torch's CPU cumsum), remove every token whose cumulative
 *     probability is <= (float)(1 - top_p); the last one is always kept.
 *     Equal logits at the cut: kept or removed where torch's sort (an
 *     unstable std::sort) leaves them, reproduced by introsort.h;
 *  5. min-p: softmax over what is left, remove every token whose probability
 *     is < (float)min_p * the largest probability;
 *  then softmax over the kept tokens and one inverse-CDF draw.
 *
 * Temperature 0 is greedy: the argmax after the repetition penalty (as
 * transformers' greedy search applies it), the lowest id on ties.
 *
 * Cost: no sort of the vocabulary. Top-k is a heap selection in one pass;
 * top-p without top-k sorts only the tokens within a few nats of the
 * largest logit, widening that window only until the cut is inside it.
 * Nothing is allocated per token: sampler_new allocates everything.
 *
 * Left out: typical-p, epsilon and eta cutoffs, no-repeat-n-gram, logit
 * bias (none is in Qwen2.5's generation_config.json).
 */
#ifndef SAMPLER_H
#define SAMPLER_H

#include <stdint.h>
#include "core/err.h"
#include "sample/introsort.h"
#include "core/rng.h"

struct kernels;

/* The parameters, as transformers takes them (doubles: top_p = 0.8 means
 * the double 0.8, whose 1 - top_p is what top-p compares against). */
struct sampler_params {
	double temperature;        /* 0 = greedy */
	int top_k;                 /* 0 = off */
	double top_p;              /* 1 = off; in [0, 1] */
	double min_p;              /* 0 = off; in [0, 1] */
	double repetition_penalty; /* 1 = off; > 0 */
};

/* A kept token: its id, its logit after penalty and temperature, and its
 * probability. */
struct sampler_cand {
	int32_t id;
	float x;
	float p;
};

/* Opaque: its buffers are the sampler's own (sampler.c). */
struct sampler;

/* Allocates a sampler for n_vocab tokens. Returns NULL with e set on
 * failure. Free with sampler_free. */
struct sampler *sampler_new(int n_vocab, struct err *e);
void sampler_free(struct sampler *s);

/* The vocabulary size it was made for. */
int sampler_n_vocab(const struct sampler *s);

/* After sampler_filter: the kept tokens and their probabilities (softmax
 * over the kept ones; they sum to 1 up to rounding), sorted by descending
 * probability when top-p ran, else in ascending id order; valid until the
 * next call that filters. */
const struct sampler_cand *sampler_kept(const struct sampler *s, int *n);

/* How many distinct ids the repetition penalty's context holds. */
int sampler_n_context(const struct sampler *s);

/* The double a float parameter was meant to be: the shortest decimal that
 * reads back as f (0.8f -> 0.8), since the stream header carries float32
 * and top-p's 1 - top_p is computed in double. */
double sampler_f32_decimal(float f);

/* The parameters a logits stream header carries (float32 fields,
 * lib/format/stream.h), each read as the decimal it was meant to be
 * (sampler_f32_decimal), into *p; then each field that over sets replaces
 * it (sampler_params_override; over may be NULL), so a flag wins over a
 * bad header value, and what results is checked (sampler_params_check). */
int sampler_params_f32(struct sampler_params *p, float temperature, int top_k, float top_p,
		       float min_p, float repetition_penalty,
		       const struct sampler_params *over, struct err *e);

/* Replaces each field of p that over sets: not NAN, top_k >= 0 (a
 * caller's flags or a request's fields over the model's defaults). */
void sampler_params_override(struct sampler_params *p, const struct sampler_params *over);

/* Checks ranges: temperature >= 0, top_k >= 0, top_p and min_p in [0, 1],
 * repetition penalty > 0, all finite. e names the parameter:
 * "top_p: 1.5 is out of range [0, 1]". */
int sampler_params_check(const struct sampler_params *p, struct err *e);

/* The repetition penalty's context: forgets it, or adds ids to it (each
 * distinct id counts once). Ids outside the vocabulary are an error. */
void sampler_clear_context(struct sampler *s);
int sampler_add_context(struct sampler *s, const int32_t *ids, long n,
			struct err *e);

/* Runs the chain on logits[0..n_vocab) and fills s->cand. The penalty is
 * applied in place and undone before it returns: logits end unchanged.
 * Returns the number kept (>= 1), or -1 with e set when a logit is NaN or
 * +inf ("logit 17 is nan") or none is finite. */
int sampler_filter(struct sampler *s, float *logits,
		   const struct sampler_params *p, struct err *e);

/* The kept token at which the cumulative probability first exceeds
 * u * (their total), walking s->cand in order; u in [0, 1). */
int32_t sampler_pick(const struct sampler *s, double u);

/* sampler_filter, then one draw with rng (none when greedy). Returns the id
 * or -1 with e set. */
int32_t sampler_next(struct sampler *s, float *logits,
		     const struct sampler_params *p, struct rng *r, struct err *e);

/* The k largest logits (ties: lower id first), sorted descending, into
 * out[0..k) (k <= n_vocab). Uses the sampler's scratch, not s->cand. */
void sampler_top(struct sampler *s, const float *logits, int k,
		 struct sampler_cand *out);

/* The min(k, n_cand) most probable kept tokens of the last sampler_filter
 * (ties: lower id first), sorted descending, into out; returns how many. */
int sampler_kept_top(const struct sampler *s, int k, struct sampler_cand *out);

/* log(sum(exp(logits))), for log-probabilities of the model's own
 * distribution (to about 1e-7; NaN when a logit is). Uses the sampler's
 * scratch, not s->cand. */
double sampler_logsumexp(struct sampler *s, const float *logits);

#endif
