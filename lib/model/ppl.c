/* ppl: see ppl.h. */
#include "model/ppl.h"
#include "core/timing.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct run {
	struct forward *f, *ref;
	const int *ids;      /* this chunk's ids */
	int chunk;
	int p0;              /* position of the sub-batch's first token */
	int V;
	float *zr, *pr;      /* [PPL_LOCKSTEP x V] reference logits, probabilities */
	double *lse_r;       /* [PPL_LOCKSTEP] */
	int *arg_r;          /* [PPL_LOCKSTEP] */
	float *p;            /* [V] scratch */
	double nll;          /* this chunk's sum */
	double emit_seconds; /* scoring time inside f's forward_eval calls */
	struct ppl_stats *s;
};

/* logsumexp of z[V] through the softmax kernel (p gets the probabilities)
 * and the first argmax. */
static double lse_of(const struct kernels *k, const float *z, float *p, int V, int *argmax)
{
	int a = 0;
	for (int i = 1; i < V; i++)
		if (z[i] > z[a])
			a = i;
	memcpy(p, z, sizeof(float) * (size_t)V);
	k->softmax(p, V);  /* p[a] = kexp(0) / sum = 1 / sum exactly rounded */
	*argmax = a;
	return (double)z[a] - log((double)p[a]);
}

static int ref_emit(void *arg, int pos, const float *z, struct err *e)
{
	struct run *r = arg;
	size_t i = (size_t)(pos - r->p0);
	memcpy(r->zr + i * r->V, z, sizeof(float) * (size_t)r->V);
	r->lse_r[i] = lse_of(r->ref->k, z, r->pr + i * r->V, r->V, &r->arg_r[i]);
	r->s->ref_nll_sum += r->lse_r[i] - (double)z[r->ids[pos + 1]];
	return 0;
}

static int emit(void *arg, int pos, const float *z, struct err *e)
{
	struct run *r = arg;
	double t0 = time_now();
	int target = r->ids[pos + 1];
	r->s->scored++;
	if (!r->ref) {
		/* -log p[target] from the softmax kernel: p = kexp(z - m) / sum,
		 * within a few ulps of exp(z - lse); a probability too small for
		 * that takes the exact path below. */
		memcpy(r->p, z, sizeof(float) * (size_t)r->V);
		r->f->k->softmax(r->p, r->V);
		if (r->p[target] >= FLT_MIN) {
			r->nll -= log((double)r->p[target]);
			r->emit_seconds += time_now() - t0;
			return 0;
		}
	}
	int a;
	double lse = lse_of(r->f->k, z, r->p, r->V, &a);
	r->nll += lse - (double)z[target];
	if (r->ref) {
		size_t i = (size_t)(pos - r->p0);
		const float *zr = r->zr + i * r->V, *pr = r->pr + i * r->V;
		double kl = 0;
		for (int v = 0; v < r->V; v++)
			kl += (double)pr[v] * ((double)zr[v] - (double)z[v]);
		r->s->kl_sum += kl - r->lse_r[i] + lse;
		r->s->agree += a == r->arg_r[i];
		r->s->compared++;
	}
	r->emit_seconds += time_now() - t0;
	return 0;
}

void ppl_stats_free(struct ppl_stats *s)
{
	free(s->chunk_nll);
	s->chunk_nll = NULL;
}

int ppl_run(struct forward *f, struct forward *ref, const int *ids, long n, int chunk,
	    int max_chunks, struct ppl_stats *s, ppl_progress_fn *progress,
	    void *parg, struct err *e)
{
	memset(s, 0, sizeof *s);
	s->chunk = chunk;
	long nc = chunk >= 2 ? n / chunk : 0;
	if (max_chunks > 0 && nc > max_chunks)
		nc = max_chunks;
	if (nc < 1)
		return err_set(e, "%ld tokens make no complete chunk of %d", n, chunk);
	s->n_chunks = (int)nc;
	int V = f->m->cfg.vocab_size;
	struct run r = { .f = f, .ref = ref, .chunk = chunk, .V = V, .s = s };
	size_t lv = (size_t)PPL_LOCKSTEP * (size_t)V;
	s->chunk_nll = calloc((size_t)nc, sizeof *s->chunk_nll);
	r.p = malloc(sizeof(float) * (size_t)V);
	if (ref) {
		r.zr = malloc(sizeof(float) * lv);
		r.pr = malloc(sizeof(float) * lv);
		r.lse_r = malloc(sizeof(double) * PPL_LOCKSTEP);
		r.arg_r = malloc(sizeof(int) * PPL_LOCKSTEP);
	}
	/* Alone, the model takes whole batches; beside a reference, both go in
	 * lockstep sub-batches. */
	int step = ref ? PPL_LOCKSTEP : f->batch;
	int rc = -1;
	if (!s->chunk_nll || !r.p || (ref && (!r.zr || !r.pr || !r.lse_r || !r.arg_r))) {
		err_set(e, "out of memory");
		goto out;
	}
	for (long c = 0; c < nc; c++) {
		r.ids = ids + c * chunk;
		r.nll = 0;
		forward_reset(f);
		if (ref)
			forward_reset(ref);
		/* The last token of a chunk is only a target: positions
		 * 0 .. chunk - 2 are run. */
		for (r.p0 = 0; r.p0 < chunk - 1; r.p0 += step) {
			int len = chunk - 1 - r.p0 < step ? chunk - 1 - r.p0 : step;
			if (ref && forward_eval(ref, r.ids + r.p0, len, 1, ref_emit, &r, e) < 0)
				goto out;
			double t0 = time_now();
			r.emit_seconds = 0;
			if (forward_eval(f, r.ids + r.p0, len, 1, emit, &r, e) < 0)
				goto out;
			s->seconds += time_now() - t0 - r.emit_seconds;
		}
		/* NaN or Inf in the weights: no number to report */
		if (!isfinite(r.nll) || !isfinite(s->ref_nll_sum)) {
			double v = isfinite(r.nll) ? s->ref_nll_sum : r.nll;
			err_set(e, "chunk %ld: the %slog-likelihood is %s (NaN or Inf in the "
				"weights? st-inspect --check finds them)", c,
				isfinite(r.nll) ? "reference's " : "", isnan(v) ? "nan" : "inf");
			goto out;
		}
		s->chunk_nll[c] = r.nll;
		s->nll_sum += r.nll;
		if (progress)
			progress(parg, (int)c + 1, (int)nc);
	}
	s->ppl = exp(s->nll_sum / (double)s->scored);
	s->ref_ppl = exp(s->ref_nll_sum / (double)s->scored);
	rc = 0;
out:
	if (rc < 0)
		ppl_stats_free(s);
	free(r.p);
	free(r.zr);
	free(r.pr);
	free(r.lse_r);
	free(r.arg_r);
	return rc;
}
