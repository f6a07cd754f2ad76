/* benchrun: see benchrun.h. */
#include "harness/benchrun.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/bf16.h"
#include "kernels/btile.h"
#include "kernels/matmul.h"
#include "kernels/qtile.h"
#include "kernels/quant.h"
#include "core/rng.h"

static const char *precision_of(const struct wmat *w)
{
	static const char *names[] = { [WT_F32] = "f32", [WT_BF16] = "bf16", [WT_Q8] = "int8",
				       [WT_Q4] = "int4", [WT_F16] = "f16", [WT_Q4K] = "q4_k",
				       [WT_Q5K] = "q5_k", [WT_Q6K] = "q6_k", [WT_Q50] = "q5_0",
				       [WT_Q51] = "q5_1", [WT_IQ4] = "iq4" };
	return names[w->type];
}

int bench_open(struct bench_contender *c, struct err *e)
{
	double t0 = time_now();
	if (model_load(&c->m, c->path, &c->mo, e) < 0 ||
	    (c->act8 = forward_act8_prepare(&c->m, c->f32act, e)) < 0 ||
	    (c->b16act && model_tile_b16(&c->m, e) < 0))
		return -1;
	c->open_s = time_now() - t0;
	/* The layers' matrices say the precision (an int4 container keeps its
	 * embedding bf16 unless quantized with --embeddings). */
	c->precision = precision_of(&c->m.w.layers[0].gate);
	c->weights = c->mo.f32 ? "widened" : c->m.copied ? "copied" : "mapped";
	/* Every matrix is read once per token, except an untied embedding, of
	 * which one row is. */
	c->bytes_per_token = c->m.weight_bytes -
			     (c->m.cfg.tie_embeddings ? 0 : wmat_bytes(&c->m.w.embed));
	return 0;
}

struct draw {
	struct sampler *s;
	struct sampler_params p;
	struct rng r;
	int next;
	double sampler_s;
	struct err *e;
};

/* Draws the next token inside the emit callback (the logits are valid only
 * there), timing the sampler apart from the forward pass. */
static int draw(void *arg, int pos, const float *logits, struct err *e)
{
	struct draw *d = arg;
	(void)pos;
	double t0 = time_now();
	d->next = sampler_next(d->s, (float *)logits, &d->p, &d->r, e);
	d->sampler_s += time_now() - t0;
	return d->next < 0;
}

int bench_run(struct forward *f, struct sampler *s, int prompt, int tokens,
	      struct bench_rep *r, struct err *e)
{
	const struct model *m = f->m;
	int V = m->cfg.vocab_size;
	struct draw d = { .s = s, .e = e };
	d.p = (struct sampler_params){ .temperature = m->gen.temperature,
		.top_k = m->gen.top_k, .top_p = m->gen.top_p, .min_p = m->gen.min_p,
		.repetition_penalty = m->gen.repetition_penalty };
	rng_seed(&d.r, 1);
	int ids[prompt > 0 ? prompt : 1];
	for (int i = 0; i < prompt; i++)
		ids[i] = (int)((i * 7919L + 13) % V);
	forward_reset(f);
	sampler_clear_context(s);
	if (sampler_add_context(s, ids, prompt, e) < 0)
		return -1;
	double t0 = time_now();
	if (forward_eval(f, ids, prompt, 0, draw, &d, e) < 0)
		return -1;
	r->ttft_s = time_now() - t0;
	r->prefill_s = r->ttft_s - d.sampler_s;
	double forward_s = 0;
	for (int i = 0; i < tokens; i++) {
		int id = d.next;
		if (sampler_add_context(s, &id, 1, e) < 0)
			return -1;
		double before = d.sampler_s;
		t0 = time_now();
		if (forward_eval(f, &id, 1, 0, draw, &d, e) < 0)
			return -1;
		forward_s += time_now() - t0 - (d.sampler_s - before);
	}
	r->decode_s = tokens > 0 ? forward_s / tokens : 0;
	r->sampler_s = d.sampler_s / (tokens + 1);
	return 0;
}

/* ---- memory ---- */

static double status_mib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	double kb = 0;
	size_t kl = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			kb = atof(line + kl + 1);
			break;
		}
	if (f)
		fclose(f);
	return kb / 1024;
}

double bench_rss_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
	return status_mib("VmRSS");
}

double bench_rss_peak(void)
{
	return status_mib("VmHWM");
}

/* ---- the OpenBLAS reference ---- */

int bench_sgemm_prefill(const struct model_config *c, int prompt, int threads, int reps,
			double *t, struct err *e)
{
	int H = c->hidden_size, Q = c->n_heads * c->head_dim,
	    KV = c->n_kv_heads * c->head_dim, FF = c->intermediate_size;
	/* One layer's products: rows x cols of each weight, and the input
	 * each reads (H: the normed residual, Q: attention, FF: the MLP). */
	const int shapes[7][2] = { { Q, H }, { KV, H }, { KV, H }, { H, Q },
				   { FF, H }, { FF, H }, { H, FF } };
	size_t layer = 0, big = (size_t)FF > (size_t)Q ? (size_t)FF : (size_t)Q;
	for (int i = 0; i < 7; i++)
		layer += (size_t)shapes[i][0] * shapes[i][1];
	size_t nw = layer * c->n_layers + (size_t)c->vocab_size * H;
	size_t T = (size_t)prompt;
	float *w = malloc(nw * sizeof *w);
	float *x = malloc(T * big * sizeof *x), *y = malloc(T * big * sizeof *y);
	float *logits = malloc((size_t)c->vocab_size * sizeof *logits);
	if (!w || !x || !y || !logits) {
		free(w), free(x), free(y), free(logits);
		return err_set(e, "out of memory for the float32 reference (%zu MB)",
			       nw * 4 / 1000000);
	}
	for (size_t i = 0; i < nw; i++)
		w[i] = (float)((i * 2654435761u) % 1000) * 1e-5f;
	for (size_t i = 0; i < T * big; i++)
		x[i] = 1e-3f * (float)(i % 7);
	openblas_set_num_threads(threads);
	for (int rep = -1; rep < reps; rep++) {
		double t0 = time_now();
		const float *wl = w;
		for (int l = 0; l < c->n_layers; l++)
			for (int i = 0; i < 7; i++) {
				int rows = shapes[i][0], cols = shapes[i][1];
				/* y[T x rows] = x[T x cols] W^T: the engine's layout. */
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, prompt, rows,
					    cols, 1.0f, x, cols, wl, cols, 0.0f, y, rows);
				wl += (size_t)rows * cols;
			}
		cblas_sgemv(CblasRowMajor, CblasNoTrans, c->vocab_size, H, 1.0f, wl, H,
			    x + (T - 1) * H, 1, 0.0f, logits, 1);
		if (rep >= 0)
			t[rep] = time_now() - t0;
	}
	openblas_set_num_threads(1);
	free(w), free(x), free(y), free(logits);
	return 0;
}

/* ---- the kernels' ceiling ---- */

int bench_kernel_gbs(const struct kernels *k, const struct wmat *like, int act8, int b16act,
		     int rows, int cols, int reps, struct spread *gbs, struct err *e)
{
	enum wtype type = like->type;
	int group_size = like->group_size;
	size_t n = (size_t)rows * cols;
	float *wf = malloc(n * sizeof *wf), *x = malloc((size_t)cols * sizeof *x);
	float *y = malloc((size_t)rows * sizeof *y), *scales = malloc(n / 8 + 64);
	uint16_t *xb = calloc((size_t)btile_ldx(cols), sizeof *xb);
	void *data = malloc(n * 4);
	double *t = malloc((size_t)reps * sizeof *t);
	struct q8act *xa = q8a_alloc(cols, 1);
	void *tiles = NULL;
	int rc = -1;
	if (!wf || !x || !y || !scales || !xb || !data || !t || !xa) {
		err_set(e, "out of memory for a %dx%d kernel test", rows, cols);
		goto done;
	}
	struct rng r;
	rng_seed(&r, 7);
	for (size_t i = 0; i < n; i++)
		wf[i] = (float)(rng_uniform(&r) - 0.5) * 0.06f;
	for (int i = 0; i < cols; i++)
		x[i] = (float)(rng_uniform(&r) - 0.5);
	struct wmat src = { .type = WT_F32, .rows = rows, .cols = cols, .data = wf };
	struct wmat w = { .type = type, .rows = rows, .cols = cols, .data = data,
			  .scales = scales, .group_size = group_size };
	/* the types quantize cannot make: the first rows of like */
	int from_file = wt_from_gguf(type);
	if (from_file && (like->cols != cols || like->rows < rows)) {
		err_set(e, "a %dx%d kernel test cannot take rows of a %dx%d matrix", rows, cols,
			like->rows, like->cols);
		goto done;
	}
	if (from_file)
		w = (struct wmat){ .type = type, .rows = rows, .cols = cols, .data = like->data,
				   .tiled = like->tiled };
	else if (type == WT_F32)
		memcpy(data, wf, n * sizeof *wf);
	else if (type == WT_BF16 || type == WT_F16)
		for (size_t i = 0; i < n; i++)
			((uint16_t *)data)[i] = type == WT_BF16 ? f32_to_bf16(wf[i])
							       : f32_to_f16(wf[i]);
	else
		quant_matrix(&src, type, w.group_size, 0, data, scales);
	if (act8 && !from_file) {
		enum qtile_scales ts = qtile_scales_for(&w);
		tiles = aligned_alloc(64, qtile_bytes(type, rows, cols, ts));
		if (!tiles) {
			err_set(e, "out of memory for a %dx%d kernel test", rows, cols);
			goto done;
		}
		qtile_pack(&w, tiles, &w);
	} else if (b16act) {
		tiles = aligned_alloc(64, btile_bytes(rows, cols));
		if (!tiles) {
			err_set(e, "out of memory for a %dx%d kernel test", rows, cols);
			goto done;
		}
		btile_pack_rows(&w, tiles, 0, rows);
		btile_view(&w, tiles, &w);
	} else if (like->il && kern_interleave(&w, data, like->il == 2) < 0) {
		err_set(e, "out of memory for a %dx%d kernel test", rows, cols);
		goto done;
	}
	k->q8a_quantize(x, cols, xa);
	for (int i = 0; i < cols; i++)
		xb[i] = f32_to_bf16(x[i]);
	double bytes = (double)wmat_bytes(&w);
	for (int i = -1; i < reps; i++) {
		double t0 = time_now();
		kern_matmul(k, &(struct kern_mm){ .y = y, .ldy = rows, .w = &w, .r0 = 0,
			.r1 = rows, .x = x, .ldx = cols, .T = 1, .xa = act8 ? xa : NULL,
			.xb = b16act ? xb : NULL });
		if (i >= 0)
			t[i] = bytes / (time_now() - t0) / 1e9;
	}
	*gbs = spread_of(t, reps);
	rc = 0;
done:
	free(wf), free(x), free(y), free(scales), free(xb), free(data), free(t), free(xa), free(tiles);
	return rc;
}

/* ---- the machine ---- */

static void first_line(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	out[0] = 0;
	if (p) {
		if (!fgets(out, (int)cap, p))
			out[0] = 0;
		pclose(p);
	}
	out[strcspn(out, "\n")] = 0;
}

void bench_machine(struct bench_machine *m)
{
	memset(m, 0, sizeof *m);
	snprintf(m->cpu, sizeof m->cpu, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	int got_model = 0, got_flags = 0;
	static const char *want[] = { "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f",
				      "avx512bw", "avx512vl", "avx512dq", "avx512_vnni",
				      "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile" };
	while (f && fgets(line, sizeof line, f) && !(got_model && got_flags)) {
		char *v = strchr(line, ':');
		if (!v)
			continue;
		v += 1 + (v[1] == ' ');
		v[strcspn(v, "\n")] = 0;
		if (!got_model && !strncmp(line, "model name", 10)) {
			snprintf(m->cpu, sizeof m->cpu, "%s", v);
			got_model = 1;
		} else if (!got_flags && !strncmp(line, "flags", 5)) {
			size_t len = 0;
			for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
				char pat[32];
				snprintf(pat, sizeof pat, " %s ", want[i]);
				char padded[sizeof line + 2];
				snprintf(padded, sizeof padded, " %s ", v);
				if (strstr(padded, pat))
					len += (size_t)snprintf(m->flags + len, sizeof m->flags - len,
								"%s%s", len ? " " : "", want[i]);
			}
			got_flags = 1;
		}
	}
	if (f)
		fclose(f);
	char head[24], dirty[8];
	first_line("git rev-parse --short=12 HEAD 2>/dev/null", head, sizeof head);
	first_line("git status --porcelain --untracked-files=no -- . ':!bench/results.jsonl' 2>/dev/null | head -c 1",
		   dirty, sizeof dirty);
	snprintf(m->commit, sizeof m->commit, "%s%s", head[0] ? head : "unknown",
		 head[0] && dirty[0] ? "+dirty" : "");
	time_t now = time(NULL);
	strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	m->cores = cpu_cores();
	snprintf(m->kernels, sizeof m->kernels, "%s", cpu_level_name(cpu_level_env(NULL)));
}

double bench_loadavg(void)
{
	double load = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = -1;
		fclose(f);
	}
	return load;
}
