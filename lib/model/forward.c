/* forward: see forward.h. */
#include "model/forward.h"
#include "core/bf16.h"
#include "core/mapfile.h"
#include "kernels/btile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Rows per unit of work split between threads. */
#define SPLIT_ALIGN 16

/* Up to three matrix products sharing an input, split between threads by
 * output rows. Rows of the products are concatenated into one space, except
 * for `paired` products (gate and up), which share the row space of the
 * first so each thread can finish its rows with silu_mul. */
struct mm {
	const struct wmat *w;
	float *y;
	int ldy;
};

struct mm_job {
	struct forward *f;
	int n;
	struct mm mm[3];
	const float *x;
	int ldx, T;
	int paired;
	const struct q8act *xa;  /* x quantized (act8), or NULL: set by run_mm */
	const uint16_t *xb;      /* x rounded to bf16 (b16act), or NULL: the same */
};

static void mm_part(void *arg, int i, int n)
{
	struct mm_job *j = arg;
	int total = 0;
	if (j->paired)
		total = j->mm[0].w->rows;
	else
		for (int m = 0; m < j->n; m++)
			total += j->mm[m].w->rows;
	int lo, hi;
	pool_split(total, i, n, SPLIT_ALIGN, &lo, &hi);
	int base = 0;
	for (int m = 0; m < j->n; m++) {
		const struct mm *p = &j->mm[m];
		int r0 = lo - base, r1 = hi - base;
		r0 = r0 < 0 ? 0 : r0;
		r1 = r1 > p->w->rows ? p->w->rows : r1;
		kern_matmul(j->f->k, &(struct kern_mm){ .y = p->y, .ldy = p->ldy,
			.w = p->w, .r0 = r0, .r1 = r1, .x = j->x, .ldx = j->ldx,
			.T = j->T, .xa = j->xa, .xb = j->xb });
		if (!j->paired)
			base += p->w->rows;
	}
	if (j->paired && hi > lo)
		for (int t = 0; t < j->T; t++)
			j->f->k->silu_mul(j->mm[0].y + (size_t)t * j->mm[0].ldy + lo,
					  j->mm[1].y + (size_t)t * j->mm[1].ldy + lo, hi - lo);
}

/* Whether any matrix of the job is stored as `type` (or as an integer type
 * for WT_Q8). */
static int job_has(const struct mm_job *j, enum wtype type)
{
	int any = 0;
	for (int m = 0; m < j->n; m++)
		any |= type == WT_Q8 ? wmat_is_int(j->mm[m].w) : j->mm[m].w->type == type;
	return any;
}

/* act8: token rows [lo, hi) of the job's inputs quantized (for its
 * integer matrices), split between the threads by tokens. */
static void quant_part(void *arg, int i, int n)
{
	struct mm_job *j = arg;
	struct forward *f = j->f;
	int lo, hi;
	pool_split(j->T, i, n, 1, &lo, &hi);
	for (int t = lo; t < hi; t++)
		f->k->q8a_quantize(j->x + (size_t)t * j->ldx, j->mm[0].w->cols, &f->xa[t]);
}

/* b16act: the same, rounded to bf16 (for its bf16 matrices), rows
 * btile_ldx(cols) apart with the pad element zero. */
static void round_part(void *arg, int i, int n)
{
	struct mm_job *j = arg;
	struct forward *f = j->f;
	int cols = j->mm[0].w->cols, ldx = btile_ldx(cols), lo, hi;
	pool_split(j->T, i, n, 1, &lo, &hi);
	for (int t = lo; t < hi; t++) {
		uint16_t *xb = f->xb + (size_t)t * ldx;
		const float *x = j->x + (size_t)t * j->ldx;
		for (int c = 0; c < cols; c++)
			xb[c] = f32_to_bf16(x[c]);
		if (ldx > cols)
			xb[cols] = 0;
	}
}

/* A part function over the job's tokens: on the pool for a prompt, on the
 * calling thread for one token. */
static void by_tokens(struct mm_job *j, pool_fn *part)
{
	if (j->T > 1)
		pool_run(j->f->pool, part, j);
	else
		part(j, 0, 1);
}

/* With act8, quantizes the job's inputs once (for its integer matrices),
 * with b16act rounds them to bf16 (for its bf16 matrices), before the rows
 * are split. */
static void convert_inputs(struct mm_job *j)
{
	struct forward *f = j->f;
	j->xa = NULL;
	j->xb = NULL;
	if (f->act8 && job_has(j, WT_Q8)) {
		by_tokens(j, quant_part);
		j->xa = f->xa;
	}
	if (f->b16act && job_has(j, WT_BF16)) {
		by_tokens(j, round_part);
		j->xb = f->xb;
	}
}

/* Converts a job's inputs, then runs its products on the pool. Inlined:
 * it is no call of its own between forward_eval and the kernels
 * (docs/architecture.md, "From a token to the inner loop"). */
static inline __attribute__((always_inline)) void run_mm(struct mm_job *j)
{
	struct forward *f = j->f;
	convert_inputs(j);
	pool_run(f->pool, mm_part, j);
}

/* Where KV head h's row for position pos of layer l starts in the cache
 * (kc, vc; forward.h). */
static size_t kv_at(const struct forward *f, int l, int h, int pos)
{
	const struct model_config *c = &f->m->cfg;
	return (((size_t)l * c->n_kv_heads + h) * f->ctx + pos) * c->head_dim;
}

/* Attention of T queries (positions p0 .. p0 + T - 1) over the cache of
 * one layer, split by (token, KV head, a run of the query heads that share
 * it), so that each cached row is read once for those heads. A run is as
 * many heads as the level's kernels take at once (att_group), or fewer
 * where that would leave threads idle: decode's one token has only
 * n_kv_heads units of whole groups. */
struct att_job {
	struct forward *f;
	int layer, p0, T;
	int per, nsub;  /* heads a run, runs a KV head */
};

static void att_runs(struct att_job *j)
{
	const struct model_config *c = &j->f->m->cfg;
	int group = c->n_heads / c->n_kv_heads, units = j->T * c->n_kv_heads;
	int runs = (group + j->f->k->att_group - 1) / j->f->k->att_group;
	if (units * runs < j->f->threads)
		runs = (j->f->threads + units - 1) / units;
	runs = runs < group ? runs : group;
	j->per = (group + runs - 1) / runs;
	j->nsub = (group + j->per - 1) / j->per;
}

static void att_part(void *arg, int i, int n)
{
	struct att_job *j = arg;
	struct forward *f = j->f;
	const struct model_config *c = &f->m->cfg;
	int hd = c->head_dim, Q = c->n_heads * hd;
	int group = c->n_heads / c->n_kv_heads, nsub = j->nsub, per = j->per;
	float scale = (float)pow(hd, -0.5);
	float *sc = f->scores + (size_t)i * ATT_MAXQ * f->ctx;
	int lo, hi;
	pool_split(j->T * c->n_kv_heads * nsub, i, n, 1, &lo, &hi);
	for (int unit = lo; unit < hi; unit++) {
		int t = unit / (c->n_kv_heads * nsub), kvh = unit / nsub % c->n_kv_heads;
		int sub = unit % nsub, h0 = kvh * group + sub * per;
		int nq = group - sub * per < per ? group - sub * per : per;
		int pos = j->p0 + t;
		const float *q = f->q + (size_t)t * Q + (size_t)h0 * hd;
		size_t head = kv_at(f, j->layer, kvh, 0);
		f->k->att_scores(sc, f->ctx, q, nq, f->kc + head, hd, pos + 1, hd, scale);
		for (int h = 0; h < nq; h++) {
			f->k->softmax(sc + (size_t)h * f->ctx, pos + 1);
			if (f->attn_trace)
				f->attn_trace(f->attn_arg, j->layer, pos, h0 + h,
					      sc + (size_t)h * f->ctx, pos + 1);
		}
		float *out = f->att + (size_t)t * Q + (size_t)h0 * hd;
		memset(out, 0, sizeof(float) * hd * (size_t)nq);
		f->k->att_values(out, sc, f->ctx, nq, f->vc + head, hd, pos + 1, hd);
	}
}

static void add(float *y, const float *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += x[i];
}

static void trace(struct forward *f, int pos, int index, const float *h)
{
	if (f->trace)
		f->trace(f->trace_arg, pos, index, h, f->m->cfg.hidden_size);
}

/* Position pos's keys and values of layer l (KV each) into the cache,
 * head by head. */
static void cache_kv(struct forward *f, int l, int pos, const float *k, const float *v)
{
	const struct model_config *c = &f->m->cfg;
	int hd = c->head_dim;
	for (int h = 0; h < c->n_kv_heads; h++) {
		size_t at = kv_at(f, l, h, pos);
		memcpy(f->kc + at, k + (size_t)h * hd, sizeof(float) * hd);
		memcpy(f->vc + at, v + (size_t)h * hd, sizeof(float) * hd);
	}
}

/* One chunk of T <= batch tokens at positions p0.. ; `last` says whether it
 * ends the call (trace, logits). */
static int chunk(struct forward *f, const int *ids, int T, int all, int last,
		 forward_emit_fn *emit, void *arg, struct err *e)
{
	const struct model_config *c = &f->m->cfg;
	const struct model_weights *w = &f->m->w;
	const struct kernels *k = f->k;
	int H = c->hidden_size, hd = c->head_dim, Q = c->n_heads * hd,
	    KV = c->n_kv_heads * hd, FF = c->intermediate_size, V = c->vocab_size;
	int p0 = f->n_past, half = hd / 2;
	float eps = (float)c->rms_norm_eps;

	for (int t = 0; t < T; t++)
		kern_row(&w->embed, ids[t], f->x + (size_t)t * H);
	if (last)
		trace(f, p0 + T - 1, 0, f->x + (size_t)(T - 1) * H);

	struct att_job aj = { .f = f, .p0 = p0, .T = T };
	att_runs(&aj);
	for (int l = 0; l < c->n_layers; l++) {
		const struct layer_weights *L = &w->layers[l];
		for (int t = 0; t < T; t++)
			k->rmsnorm(f->xn + (size_t)t * H, f->x + (size_t)t * H, L->attn_norm, H, eps);
		struct mm_job qkv = { .f = f, .n = 3, .mm = { { .w = &L->wq, .y = f->q, .ldy = Q },
					{ .w = &L->wk, .y = f->kn, .ldy = KV },
					{ .w = &L->wv, .y = f->vn, .ldy = KV } },
				      .x = f->xn, .ldx = H, .T = T };
		run_mm(&qkv);
		for (int t = 0; t < T; t++) {
			const float *cs = f->rcos + (size_t)(p0 + t) * half;
			const float *sn = f->rsin + (size_t)(p0 + t) * half;
			float *qt = f->q + (size_t)t * Q, *kt = f->kn + (size_t)t * KV,
			      *vt = f->vn + (size_t)t * KV;
			add(qt, L->bq, Q);
			add(kt, L->bk, KV);
			add(vt, L->bv, KV);
			k->rope(qt, c->n_heads, hd, cs, sn);
			k->rope(kt, c->n_kv_heads, hd, cs, sn);
			cache_kv(f, l, p0 + t, kt, vt);
		}
		aj.layer = l;
		pool_run(f->pool, att_part, &aj);
		struct mm_job o = { .f = f, .n = 1, .mm = { { .w = &L->wo, .y = f->tmp, .ldy = H } },
				    .x = f->att, .ldx = Q, .T = T };
		run_mm(&o);
		add(f->x, f->tmp, T * H);

		for (int t = 0; t < T; t++)
			k->rmsnorm(f->xn + (size_t)t * H, f->x + (size_t)t * H, L->mlp_norm, H, eps);
		struct mm_job gu = { .f = f, .n = 2, .mm = { { .w = &L->gate, .y = f->g, .ldy = FF },
					{ .w = &L->up, .y = f->u, .ldy = FF } },
				     .x = f->xn, .ldx = H, .T = T, .paired = 1 };
		run_mm(&gu);
		struct mm_job down = { .f = f, .n = 1, .mm = { { .w = &L->down, .y = f->tmp, .ldy = H } },
				       .x = f->g, .ldx = FF, .T = T };
		run_mm(&down);
		add(f->x, f->tmp, T * H);
		if (last)
			trace(f, p0 + T - 1, l + 1, f->x + (size_t)(T - 1) * H);
	}
	f->n_past += T;
	f->positions += T;
	if (!last && !all)
		return 0;

	/* Final norm and LM head for the positions that need logits. */
	int first = all ? 0 : T - 1, nh = T - first;
	for (int t = first; t < T; t++)
		k->rmsnorm(f->xn + (size_t)t * H, f->x + (size_t)t * H, w->final_norm, H, eps);
	if (last)
		trace(f, p0 + T - 1, c->n_layers + 1, f->xn + (size_t)(T - 1) * H);
	struct mm_job head = { .f = f, .n = 1, .mm = { { .w = &w->lm_head, .y = f->logits, .ldy = V } },
			       .x = f->xn + (size_t)first * H, .ldx = H, .T = nh };
	run_mm(&head);
	f->head_rows += nh;
	for (int t = 0; t < nh; t++)
		if (emit(arg, p0 + first + t, f->logits + (size_t)t * V, e) != 0)
			return -1;
	return 0;
}

int forward_eval(struct forward *f, const int *ids, int n, int all,
		 forward_emit_fn *emit, void *arg, struct err *e)
{
	int V = f->m->cfg.vocab_size;
	for (int i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= V)
			return err_set(e, "id %d is outside the vocabulary (0..%d)", ids[i],
				       V - 1);
	if (n > f->ctx - f->n_past)
		return err_set(e, "context full: %d positions cached, %d more do not fit "
			       "in %d", f->n_past, n, f->ctx);
	for (int done = 0; done < n; done += f->batch) {
		int T = n - done < f->batch ? n - done : f->batch;
		if (chunk(f, ids + done, T, all, done + T == n, emit, arg, e) < 0)
			return -1;
	}
	return 0;
}

void forward_reset(struct forward *f)
{
	f->n_past = 0;
}

void forward_keep(struct forward *f, int n)
{
	/* Keys and values of a position depend only on the ids up to it, so
	 * the first n rows stay valid; later rows are overwritten as new ids
	 * come. */
	if (n >= 0 && n < f->n_past)
		f->n_past = n;
}

/* The RoPE table as transformers computes it, in float32:
 * inv_freq[i] = 1 / theta^(2i / d), angle = pos * inv_freq[i]. */
static void rope_table(struct forward *f)
{
	const struct model_config *c = &f->m->cfg;
	int half = c->head_dim / 2;
	for (int i = 0; i < half; i++) {
		float inv = 1.0f / powf((float)c->rope_theta,
					(float)(2 * i) / (float)c->head_dim);
		for (int p = 0; p < f->ctx; p++) {
			float a = (float)p * inv;
			f->rcos[(size_t)p * half + i] = cosf(a);
			f->rsin[(size_t)p * half + i] = sinf(a);
		}
	}
}

static void *alloc_n(struct forward *f, size_t n, size_t size)
{
	f->state_bytes += n * size;
	return calloc(n, size);
}

static float *alloc(struct forward *f, size_t n)
{
	return alloc_n(f, n, sizeof(float));
}

/* Whether pred holds for any matrix of m's blocks or its LM head. */
static int any_matrix(const struct model *m, int (*pred)(const struct wmat *))
{
	int any = pred(&m->w.lm_head);
	for (int l = 0; l < m->cfg.n_layers; l++) {
		const struct layer_weights *L = &m->w.layers[l];
		const struct wmat *ws[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate,
					    &L->up, &L->down };
		for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
			any |= pred(ws[i]);
	}
	return any;
}

static int is_bf16(const struct wmat *w)
{
	return w->type == WT_BF16;
}

/* Whether w is an int8 or int4 matrix tiled for int8 activations (the
 * types tiled from the start run either way). */
static int is_tiled(const struct wmat *w)
{
	return w->tiled && wmat_qtileable(w);
}

/* Whether w is a bf16 matrix tiled for bf16 activations. */
static int is_btiled(const struct wmat *w)
{
	return w->tiled && w->type == WT_BF16;
}

int forward_has_int_weights(const struct model *m)
{
	return any_matrix(m, wmat_is_int);
}

int forward_has_bf16_weights(const struct model *m)
{
	return any_matrix(m, is_bf16);
}

int forward_act8_prepare(struct model *m, int f32act, struct err *e)
{
	if (f32act || !forward_has_int_weights(m))
		return 0;
	return model_tile(m, e) < 0 ? -1 : 1;
}

const char *forward_act8_kernel(enum cpu_level level)
{
	return level == CPU_AVX512 && kern_has_vnni() ? "VNNI"
	       : level >= CPU_AVX2 ? "AVX2" : "scalar";
}

int forward_init(struct forward *f, const struct model *m,
		 const struct forward_opts *o, struct err *e)
{
	memset(f, 0, sizeof *f);
	const struct model_config *c = &m->cfg;
	f->m = m;
	f->k = kernels_for(o->level);
	f->threads = o->threads > 0 ? o->threads : cpu_cores();
	f->batch = o->batch > 0 ? o->batch : FORWARD_BATCH_DEFAULT;
	f->act8 = o->act8;
	f->trace = o->trace;
	f->trace_arg = o->trace_arg;
	f->attn_trace = o->attn_trace;
	f->attn_arg = o->attn_arg;
	f->b16act = o->b16act;
	if (f->act8 && !forward_has_int_weights(m))
		return err_set(e, "int8 activations need int8 or int4 weights; the model "
			       "has none");
	if (any_matrix(m, is_tiled) != f->act8 && any_matrix(m, wmat_qtileable))
		return err_set(e, f->act8 ? "int8 activations need the model's integer "
			       "matrices tiled (model_tile)" : "a tiled model runs with int8 "
			       "activations only");
	if (f->b16act && !forward_has_bf16_weights(m))
		return err_set(e, "bf16 activations need bf16 weights; the model has none");
	if (any_matrix(m, is_btiled) != f->b16act && any_matrix(m, is_bf16))
		return err_set(e, f->b16act ? "bf16 activations need the model's bf16 matrices "
			       "tiled (model_tile_b16)" : "a model tiled for bf16 activations "
			       "runs with them only");
	f->ctx = o->ctx > 0 ? o->ctx : c->max_positions < FORWARD_CTX_DEFAULT
						? c->max_positions : FORWARD_CTX_DEFAULT;
	if (f->ctx > c->max_positions)
		return err_set(e, "context of %d positions exceeds the model's %d "
			       "(max_position_embeddings)", f->ctx, c->max_positions);
	size_t B = (size_t)f->batch, H = (size_t)c->hidden_size,
	       Q = (size_t)c->n_heads * c->head_dim,
	       KV = (size_t)c->n_kv_heads * c->head_dim, FF = (size_t)c->intermediate_size,
	       V = (size_t)c->vocab_size, C = (size_t)f->ctx, L = (size_t)c->n_layers;
	f->x = alloc(f, B * H);
	f->xn = alloc(f, B * H);
	f->tmp = alloc(f, B * H);
	f->q = alloc(f, B * Q);
	f->att = alloc(f, B * Q);
	f->g = alloc(f, B * FF);
	f->u = alloc(f, B * FF);
	f->logits = alloc(f, B * V);
	f->scores = alloc(f, (size_t)f->threads * ATT_MAXQ * C);
	f->kn = alloc(f, B * KV);
	f->vn = alloc(f, B * KV);
	f->kv_bytes = sizeof(float) * L * C * KV;
	f->state_bytes += 2 * f->kv_bytes;
	f->kc = anon_alloc(f->kv_bytes);
	f->vc = anon_alloc(f->kv_bytes);
	f->rcos = alloc(f, C * (size_t)(c->head_dim / 2));
	f->rsin = alloc(f, C * (size_t)(c->head_dim / 2));
	size_t widest = H > Q ? H : Q;
	widest = FF > widest ? FF : widest;
	if (!f->x || !f->xn || !f->tmp || !f->q || !f->att || !f->g || !f->u ||
	    !f->logits || !f->scores || !f->kn || !f->vn || !f->kc || !f->vc || !f->rcos ||
	    !f->rsin ||
	    (f->act8 && !(f->xa = q8a_alloc((int)widest, f->batch))) ||
	    (f->b16act && !(f->xb = alloc_n(f, B * (size_t)btile_ldx((int)widest), sizeof *f->xb)))) {
		size_t bytes = f->state_bytes;  /* forward_free clears it */
		forward_free(f);
		return err_set(e, "out of memory for the run state (%zu bytes)", bytes);
	}
	rope_table(f);
	f->pool = pool_new(f->threads, e);
	if (!f->pool) {
		forward_free(f);
		return -1;
	}
	return 0;
}

void forward_free(struct forward *f)
{
	pool_free(f->pool);
	void *bufs[] = { f->x, f->xn, f->tmp, f->q, f->att, f->g, f->u, f->logits,
			 f->scores, f->kn, f->vn, f->rcos, f->rsin, f->xa, f->xb };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		free(bufs[i]);
	if (f->kc)
		munmap(f->kc, f->kv_bytes);
	if (f->vc)
		munmap(f->vc, f->kv_bytes);
	memset(f, 0, sizeof *f);
}
