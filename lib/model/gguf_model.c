/* gguf_model: see gguf_model.h. */
#include "model/gguf_model.h"
#include "core/jsonutil.h"
#include "core/bf16.h"
#include "core/mapfile.h"
#include "format/gguf_arch.h"
#include "kernels/quant.h"
#include "kernels/qtile.h"

#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ALIGN 64

/* How a matrix is held: as stored, as int4 or int8 (then tiled for int8
 * activations, or not), in K-quant tiles, in qtile.h's tiles from the
 * start (Q5_0, Q5_1, IQ4_NL, IQ4_XS), or widened. */
enum plan { P_VIEW, P_Q4, P_Q8, P_KQ, P_TILE, P_F32 };

static int is_kquant(enum gguf_ttype t)
{
	return t == GGML_Q3_K || t == GGML_Q4_K || t == GGML_Q5_K || t == GGML_Q6_K;
}

static enum plan plan_of(const struct gguf_tensor *t, const struct model_opts *o)
{
	if (o->f32)
		return t->type == GGML_F32 && o->mmap ? P_VIEW : P_F32;
	if (t->type == GGML_BF16 || t->type == GGML_F16 || t->type == GGML_F32)
		return P_VIEW;
	if (is_kquant(t->type))
		return P_KQ;
	if (t->type == GGML_Q5_0 || t->type == GGML_Q5_1 || t->type == GGML_IQ4_NL ||
	    t->type == GGML_IQ4_XS)
		return P_TILE;
	return t->type == GGML_Q4_0 ? P_Q4 : t->type == GGML_Q8_0 ? P_Q8 : P_F32;
}

/* Bytes of the codes of a P_Q4 or P_Q8 matrix, rounded up to ALIGN (its
 * scales follow them). */
static size_t code_bytes(const struct gguf_tensor *t, enum plan p)
{
	size_t b = p == P_Q4 ? (size_t)t->nelem / 2 : (size_t)t->nelem;
	return (b + ALIGN - 1) / ALIGN * ALIGN;
}

/* The scales of a P_TILE matrix's tiles: halves, but for IQ4_XS, whose
 * scales (a half times a 6-bit integer) are floats (qtile.h). */
static enum qtile_scales tile_scales(enum gguf_ttype t)
{
	return t == GGML_IQ4_XS ? QT_F32 : QT_F16;
}

/* Bytes a matrix takes in m->owned, rounded up to ALIGN. */
static size_t owned_bytes(const struct gguf_tensor *t, enum plan p)
{
	size_t n = (size_t)t->nelem, b = 0;
	if (p == P_F32)
		b = n * sizeof(float);
	else if (p == P_Q4 || p == P_Q8)
		b = code_bytes(t, p) + n / Q4_BLOCK * sizeof(float);
	else if (p == P_KQ)
		b = kq_bytes(gguf_tile_wtype(t->type), (int)t->ne[1], (int)t->ne[0]);
	else if (p == P_TILE)
		b = qtile_bytes(gguf_tile_wtype(t->type), (int)t->ne[1], (int)t->ne[0],
				tile_scales(t->type));
	return (b + ALIGN - 1) / ALIGN * ALIGN;
}

struct loader {
	struct model *m;
	const char *name;
	const struct model_opts *o;
	unsigned char *next;     /* next free byte of m->owned */
	float *vec;              /* next free float of m->vecs */
	int counts[GGML_NTYPES]; /* matrices dequantized to float32, by type */
	int bf16[GGML_NTYPES];   /* ... to bf16, which holds their values exactly */
	char rounds[GGML_NTYPES];/* a matrix of the type whose values bf16 would round */
	int repacked[GGML_NTYPES]; /* matrices put exactly into int4, int8 or tiles, by type */
	struct err *e;
	const struct gguf_file *src;  /* the mapping, when m->gg is a partial copy */
};

/* Where tensor t of m->gg is read from when it is converted (or widened,
 * a vector): the mapping, when the copy holds only the matrices used as
 * stored. */
static const struct gguf_tensor *source(const struct loader *L, const struct gguf_tensor *t)
{
	return L->src ? &L->src->t[t - L->m->gg->t] : t;
}

static const struct gguf_tensor *find(struct loader *L, const char *fmt, int layer)
{
	char hf[160], gg[160];
	snprintf(hf, sizeof hf, fmt, layer);
	/* the manifest check guarantees presence and shape */
	return gguf_find_tensor(L->m->gg, gguf_from_hf(hf, gg, sizeof gg));
}

/* Gives back the pages wholly inside [p, p + bytes) of the file's mapping
 * (or its copy, with mmap) once they have been converted or copied:
 * nothing reads them again, so the file's bytes are not held twice. */
static void release(const void *p, size_t bytes)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p;
	uintptr_t lo = (a + page - 1) / page * page, hi = (a + bytes) / page * page;
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);  /* advice: no error to report */
}

/* The error for block k of t, whose half `what` (its scale, or Q5_1's
 * min) is Inf or NaN. */
static int not_finite(struct loader *L, const struct gguf_tensor *t, const char *what,
		      uint64_t k)
{
	char qn[160];
	return err_set(L->e, "%s: tensor %s: %s %" PRIu64 " is not finite", L->name,
		       json_quote(qn, sizeof qn, t->name), what, k);
}

static int matrix(struct loader *L, struct wmat *w, const char *fmt, int layer)
{
	const struct gguf_tensor *t = find(L, fmt, layer);
	enum plan p = plan_of(t, L->o);
	if (p != P_VIEW)
		t = source(L, t);
	/* (checked here, not before loading, so that each tensor's pages are
	 * read once, just before they are converted) */
	int64_t bad = gguf_bad_scale(t->type, t->data, t->nelem);
	if (bad >= 0)
		return err_set(L->e, "%s: tensor '%s': super-block %lld: scale is Inf or NaN",
			       L->name, t->name, (long long)bad);
	int rows = (int)t->ne[1], cols = (int)t->ne[0];
	*w = (struct wmat){ .rows = rows, .cols = cols };
	if (p == P_VIEW) {
		w->type = t->type == GGML_BF16 ? WT_BF16 : t->type == GGML_F16 ? WT_F16 : WT_F32;
		w->data = t->data;
	} else if (p == P_Q4 || p == P_Q8) {
		/* A block is an f16 scale, then the 32 weights' codes (16 bytes
		 * of int4 as our packing, or 32 of int8): the codes go to one
		 * array, the scales, widened exactly, to another. */
		unsigned char *q = L->next;
		float *s = (float *)(q + code_bytes(t, p));
		for (uint64_t k = 0; k < t->nelem / Q4_BLOCK; k++) {
			if (p == P_Q4) {
				const unsigned char *b = (const unsigned char *)t->data +
							 k * gguf_ttype_size(t->type);
				s[k] = f16_to_f32((uint16_t)(b[0] | b[1] << 8));
				memcpy(q + Q4_BLOCK / 2 * k, b + 2, Q4_BLOCK / 2);
			} else {
				s[k] = gguf_int8_group(t->type, t->data, k, (int8_t *)q + Q4_BLOCK * k);
			}
			/* as qfile.c refuses a container's: the kernels would
			 * spread it as NaN */
			if (!isfinite(s[k]))
				return not_finite(L, t, "scale", k);
		}
		*w = (struct wmat){ .type = p == P_Q4 ? WT_Q4 : WT_Q8, .rows = rows, .cols = cols,
				    .data = q, .scales = s, .group_size = Q4_BLOCK };
	} else if (p == P_TILE) {
		/* each block's codes and scales (and Q5_1's min) put into its
		 * tile (qtile.h); an IQ4_XS super-block is 8 blocks of 32 */
		enum wtype type = gguf_tile_wtype(t->type);
		*w = (struct wmat){ .type = type, .rows = rows, .cols = cols, .data = L->next,
				    .tiled = (int)tile_scales(t->type) + 1 };
		memset(L->next, 0, qtile_bytes(type, rows, cols, tile_scales(t->type)));
		uint64_t k = 0;
		for (int r = 0; r < rows; r++)
			for (int blk = 0; blk < cols / Q4_BLOCK; blk++, k++) {
				uint8_t u[32];
				if (type == WT_IQ4) {
					float sc = gguf_iq4_group(t->type, t->data, k, u);
					if (!isfinite(sc))
						return not_finite(L, t, "scale", k);
					qtile_iq4_put(w, L->next, r, blk, u, sc);
					continue;
				}
				uint16_t d, mn;
				gguf_q5_block(t->type, (const unsigned char *)t->data +
						       k * gguf_ttype_size(t->type), u, &d, &mn);
				if (!isfinite(f16_to_f32(d)) || !isfinite(f16_to_f32(mn)))
					return not_finite(L, t, isfinite(f16_to_f32(d)) ? "min" : "scale",
							  k);
				qtile_q5_put(w, L->next, r, blk, u, d, mn);
			}
	} else if (p == P_KQ) {
		/* each super-block decoded and put into its tile (kquant.h) */
		*w = (struct wmat){ .type = gguf_tile_wtype(t->type), .rows = rows, .cols = cols,
				    .data = L->next };
		memset(L->next, 0, kq_bytes(w->type, rows, cols));
		int nsb = cols / KQ_SB;
		uint64_t bs = gguf_ttype_size(t->type);
		const unsigned char *b = t->data;
		struct kq_block k;
		for (int r = 0; r < rows; r++)
			for (int sb = 0; sb < nsb; sb++, b += bs) {
				gguf_kdecode(t->type, b, &k);
				kq_put(w, L->next, r, sb, &k);
			}
	} else {
		float *v = (float *)L->next;
		gguf_dequant(t->type, t->data, t->nelem, v);
		w->type = WT_F32;
		w->data = v;
		L->counts[t->type]++;
		/* bf16 where it holds every value exactly (not with --f32) */
		if (!L->o->f32 && gguf_narrow_bf16(v, t->nelem)) {
			w->type = WT_BF16;
			L->counts[t->type]--;
			L->bf16[t->type]++;
		} else if (!L->o->f32) {
			L->rounds[t->type] = 1;
		}
	}
	if (p != P_VIEW && p != P_F32)
		L->repacked[t->type]++;
	if (p != P_VIEW)
		release(t->data, t->bytes);
	L->next += owned_bytes(t, p);
	L->m->weight_bytes += wmat_bytes(w);
	return 0;
}

static int vector(struct loader *L, const float **out, const char *fmt, int layer)
{
	const struct gguf_tensor *t = source(L, find(L, fmt, layer));
	gguf_dequant(t->type, t->data, t->nelem, L->vec);
	*out = L->vec;
	L->vec += t->nelem;
	return 0;
}

/* Every tensor's type must be one gguf_dequant reads; the sizes of
 * m->owned and m->vecs. */
static int check_types(struct loader *L, size_t *owned, size_t *vecs)
{
	const struct gguf_file *f = L->m->gg;
	*owned = *vecs = 0;
	for (int i = 0; i < f->ntensors; i++) {
		const struct gguf_tensor *t = &f->t[i];
		if (!gguf_can_dequant(t->type))
			return err_set(L->e, "%s: tensor '%s': type %s is not supported",
				       L->name, t->name, gguf_ttype_name(t->type));
		if (is_kquant(t->type) && t->ne[0] > KQ_MAX_COLS)
			return err_set(L->e, "%s: tensor '%s': rows of %lld weights are longer "
				       "than the K-quant kernels' %d", L->name, t->name,
				       (long long)t->ne[0], KQ_MAX_COLS);
		if (t->ndim == 1)
			*vecs += (size_t)t->nelem;
		else
			*owned += owned_bytes(t, plan_of(t, L->o));
	}
	return 0;
}

/* Appends to m->note (cut at its size). */
static void say(struct loader *L, size_t *o, const char *fmt, ...)
{
	size_t cap = sizeof L->m->note;
	if (*o >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(L->m->note + *o, cap - *o, fmt, ap);
	va_end(ap);
	*o += n > 0 ? (size_t)n : 0;
}

/* m->note: what was converted, e.g. "GGUF: 28 Q4_0 matrices repacked as
 * int4 (exact), 1 Q8_0 matrix repacked as int8 (exact)". */
static void note(struct loader *L)
{
	size_t o = 0;
	say(L, &o, "GGUF");
	const char *sep = ": ";
	const struct { enum gguf_ttype from; const char *to; } re[] = {
		{ GGML_Q4_0, "int4" }, { GGML_Q8_0, "int8" }, { GGML_IQ4_NL, "4-bit tiles" },
		{ GGML_IQ4_XS, "4-bit tiles" },
		{ GGML_Q5_0, "5-bit tiles" }, { GGML_Q5_1, "5-bit tiles" },
		{ GGML_Q4_K, "K-quant tiles" }, { GGML_Q5_K, "K-quant tiles" },
		{ GGML_Q6_K, "K-quant tiles" }, { GGML_Q3_K, "Q6_K tiles" } };
	for (size_t i = 0; i < sizeof re / sizeof re[0]; i++) {
		int n = L->repacked[re[i].from];
		if (n) {
			say(L, &o, "%s%d %s matri%s repacked as %s (exact)", sep, n,
			    gguf_ttype_name(re[i].from), n == 1 ? "x" : "ces", re[i].to);
			sep = ", ";
		}
	}
	for (int t = 0; t < GGML_NTYPES; t++) {
		const char *name = gguf_ttype_name((enum gguf_ttype)t);
		if (L->bf16[t]) {
			say(L, &o, "%s%d %s dequantized to bf16 (exact)", sep, L->bf16[t], name);
			sep = ", ";
		}
		if (L->counts[t]) {
			say(L, &o, "%s%d %s dequantized to float32 (exact%s)", sep, L->counts[t], name,
			    L->rounds[t] ? "; bf16 would round them" : "");
			sep = ", ";
		}
	}
	if (!strcmp(sep, ": "))
		say(L, &o, ": every matrix as stored");
}

static int fill(struct loader *L)
{
	struct model *m = L->m;
	const struct model_config *c = &m->cfg;
	size_t owned, nvec;
	if (check_types(L, &owned, &nvec) < 0)
		return -1;
	m->vecs = malloc(sizeof(float) * (nvec ? nvec : 1));
	m->owned = owned ? anon_alloc(owned) : NULL;
	m->owned_size = owned;
	m->w.layers = calloc((size_t)c->n_layers, sizeof *m->w.layers);
	if (!m->vecs || (owned && !m->owned) || !m->w.layers)
		return err_set(L->e, "%s: out of memory", L->name);
	L->next = m->owned;
	L->vec = m->vecs;
	if (matrix(L, &m->w.embed, "model.embed_tokens.weight", 0) < 0)
		return -1;
	for (int l = 0; l < c->n_layers; l++) {
		struct layer_weights *W = &m->w.layers[l];
		if (vector(L, &W->attn_norm, "model.layers.%d.input_layernorm.weight", l) < 0 ||
		    matrix(L, &W->wq, "model.layers.%d.self_attn.q_proj.weight", l) < 0 ||
		    vector(L, &W->bq, "model.layers.%d.self_attn.q_proj.bias", l) < 0 ||
		    matrix(L, &W->wk, "model.layers.%d.self_attn.k_proj.weight", l) < 0 ||
		    vector(L, &W->bk, "model.layers.%d.self_attn.k_proj.bias", l) < 0 ||
		    matrix(L, &W->wv, "model.layers.%d.self_attn.v_proj.weight", l) < 0 ||
		    vector(L, &W->bv, "model.layers.%d.self_attn.v_proj.bias", l) < 0 ||
		    matrix(L, &W->wo, "model.layers.%d.self_attn.o_proj.weight", l) < 0 ||
		    vector(L, &W->mlp_norm, "model.layers.%d.post_attention_layernorm.weight", l) < 0 ||
		    matrix(L, &W->gate, "model.layers.%d.mlp.gate_proj.weight", l) < 0 ||
		    matrix(L, &W->up, "model.layers.%d.mlp.up_proj.weight", l) < 0 ||
		    matrix(L, &W->down, "model.layers.%d.mlp.down_proj.weight", l) < 0)
			return -1;
	}
	if (vector(L, &m->w.final_norm, "model.norm.weight", 0) < 0)
		return -1;
	if (c->tie_embeddings)
		m->w.lm_head = m->w.embed;
	else if (matrix(L, &m->w.lm_head, "lm_head.weight", 0) < 0)
		return -1;
	note(L);
	return model_interleave(m, L->e);
}

/* The validated file in anonymous memory, its data section 64-byte
 * aligned, validated again (its views replace the mapping's): only the
 * header and the matrices used as stored are read into it;
 * the mapping moves to *src, from which the others are converted (and their
 * pages given back, release), so the file is not held twice. */
static int copy_file(struct model *m, const char *name, const struct model_opts *o,
		     struct gguf_file *src, struct err *e)
{
	const struct gguf_file *f = m->gg;
	size_t pad = (ALIGN - f->data_offset % ALIGN) % ALIGN;
	struct model_range *r = malloc(sizeof *r * (size_t)(f->ntensors + 1));
	if (!r)
		return err_set(e, "%s: out of memory", name);
	int n = 0;
	r[n++] = (struct model_range){ 0, f->data_offset };
	for (int i = 0; i < f->ntensors; i++)
		if (f->t[i].ndim > 1 && plan_of(&f->t[i], o) == P_VIEW)
			r[n++] = (struct model_range){ f->data_offset + f->t[i].offset, f->t[i].bytes };
	unsigned char *p = model_anon_read_ranges(m, name, f->size, pad, r, n, e);
	free(r);
	if (!p)
		return -1;
	*src = *m->gg;
	release(src->base, src->data_offset);  /* the header, now in the copy */
	return gguf_parse(m->gg, p, src->size, name, e);
}

int model_load_gguf(struct model *m, const char *path, const struct model_opts *o,
		    struct err *e)
{
	m->gg = malloc(sizeof *m->gg);
	if (!m->gg)
		return err_set(e, "%s: out of memory", path);
	if (gguf_open(m->gg, path, e) < 0) {
		free(m->gg);
		m->gg = NULL;
		return -1;
	}
	struct manifest want, have;
	manifest_init(&want);
	manifest_init(&have);
	struct loader L = { .m = m, .name = path, .o = o, .e = e };
	struct gguf_file src = { 0 };
	int rc = gguf_qwen2_config(m->gg, path, &m->cfg, &m->gen, e) < 0 ||
		 model_check_eos(m, path, e) < 0 ||
		 manifest_build(&want, &m->cfg, e) < 0 ||
		 manifest_from_gguf(&have, m->gg, e) < 0 ||
		 manifest_check(&want, &have, path, "its GGUF hyperparameters", e) < 0 ? -1 : 0;
	if (rc == 0 && !o->mmap) {
		rc = copy_file(m, path, o, &src, e);
		L.src = &src;
	}
	if (rc == 0)
		rc = fill(&L);
	gguf_close(&src);
	manifest_free(&want);
	manifest_free(&have);
	if (rc < 0)
		model_free(m);
	return rc;
}
