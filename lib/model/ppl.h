/* ppl: perplexity of a model over a token stream, optionally side by side
 * with a reference model (KL divergence, top-1 agreement).
 *
 * Protocol (tests/golden/README.md): the stream is cut into non-overlapping
 * chunks of `chunk` tokens from its start, a partial last chunk is dropped;
 * each chunk is evaluated from an empty cache; in each chunk every token but
 * the first is scored: NLL = logsumexp(z) - z[target] of the logits z of
 * the position before it; NLLs are summed in float64; ppl = exp(sum / scored).
 *
 * Alone, a model takes the chunk in batches of its forward's batch size.
 * With a reference, both models see the same tokens in lockstep (sub-batches
 * of PPL_LOCKSTEP positions, so only that many reference logits are ever
 * held), and at every scored position:
 *   KL(p_ref || p) = sum_i p_ref[i] (z_ref[i] - z[i]) - lse_ref + lse
 * (summed in float64) and whether the two argmaxes (first maximum) agree.
 *
 * Probabilities come from the forward pass's own softmax kernel
 * (lib/kernels/kernels.h: m = max z, e = kexp(z - m), p = e / sum e). Alone, the
 * NLL is -log p[target] (kexp is within a few ulps of exp: far below the
 * 1e-4 the golden file is held to). Beside a reference, logsumexp is exact
 * in the same pass: p at the argmax is exactly 1 / sum e, so
 * lse = m - log(p[argmax]), and NLL = lse - z[target].
 * The results do not depend on thread counts or timing: the same command
 * gives the same digits.
 */
#ifndef PPL_H
#define PPL_H

#include "core/err.h"
#include "model/forward.h"

#define PPL_LOCKSTEP 16

struct ppl_stats {
	int chunk, n_chunks;
	long scored;
	double nll_sum, ppl;
	double *chunk_nll;     /* n_chunks sums; owned, ppl_stats_free */
	long compared;         /* positions compared with the reference (0 without) */
	double ref_nll_sum, ref_ppl;  /* the reference's own, same positions */
	double kl_sum;
	long agree;            /* top-1 agreements */
	double seconds;        /* this model's forward passes, the reference's excluded */
};

/* Called after each chunk: done of total. */
typedef void ppl_progress_fn(void *arg, int done, int total);

/* Runs the protocol over ids[0..n) with chunk tokens per chunk (at most
 * max_chunks chunks when max_chunks > 0) on f, and side by side with ref
 * when ref is not NULL (both must have the same vocabulary and a context of
 * at least chunk positions). Fills s (free with ppl_stats_free). Returns 0,
 * or -1 with e filled (no complete chunk, an id out of range, memory, a
 * log-likelihood that is not finite: NaN or Inf in either model's
 * weights). */
int ppl_run(struct forward *f, struct forward *ref, const int *ids, long n, int chunk,
	    int max_chunks, struct ppl_stats *s, ppl_progress_fn *progress,
	    void *parg, struct err *e);

void ppl_stats_free(struct ppl_stats *s);

#endif
