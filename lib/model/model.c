/* model: see model.h. */
#include "model/model.h"
#include "core/bf16.h"
#include "core/mapfile.h"
#include "format/manifest.h"
#include "format/modelpath.h"
#include "format/qfile.h"
#include "core/cpu.h"
#include "kernels/btile.h"
#include "kernels/matmul.h"
#include "kernels/qtile.h"
#include "kernels/quant.h"
#include "model/gguf_model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_ALIGN 64

/* The file against the manifest its config implies: the first difference
 * is the error. */
static int check_manifest(const struct model *m, const char *name, struct err *e)
{
	struct manifest want, have;
	manifest_init(&want);
	manifest_init(&have);
	int rc = manifest_build(&want, &m->cfg, e) < 0 ||
		 manifest_from_st(&have, &m->st, e) < 0 ||
		 manifest_check(&want, &have, name, "config.json", e) < 0 ? -1 : 0;
	manifest_free(&want);
	manifest_free(&have);
	return rc;
}

static int dtype_ok(const struct st_tensor *t, const char *name, struct err *e)
{
	if (t->dtype != ST_BF16 && t->dtype != ST_F32)
		return err_set(e, "%s: tensor '%s': dtype %s is not supported (BF16 or "
			       "F32)", name, t->name, st_dtype_name(t->dtype));
	return 0;
}

static int aligned(const struct st_file *f)
{
	for (int i = 0; i < f->ntensors; i++)
		if ((uintptr_t)f->tensors[i].data % st_dtype_size(f->tensors[i].dtype))
			return 0;
	return 1;
}

/* The file `name` (size bytes) read into fresh anonymous memory at offset
 * pad, which the caller picks so that the data it cares about lands 64-byte
 * aligned. read(), not a copy from the mapping: one fault per 4 KiB page of
 * the mapping costs seconds. */
unsigned char *model_anon_read(struct model *m, const char *name, size_t size,
			       size_t pad, struct err *e)
{
	const struct model_range all = { 0, size };
	return model_anon_read_ranges(m, name, size, pad, &all, 1, e);
}

unsigned char *model_anon_read_ranges(struct model *m, const char *name, size_t size,
				      size_t pad, const struct model_range *r, int n,
				      struct err *e)
{
	size_t bytes = pad + size;
	unsigned char *p = anon_alloc(bytes);
	if (!p) {
		err_set(e, "%s: cannot allocate %zu bytes for the weights: %s",
			name, bytes, strerror(errno));
		return NULL;
	}
	m->copy = p;
	m->copy_size = bytes;
	m->copied = 1;
	int fd = file_open_regular(name, NULL, e);
	if (fd < 0)
		return NULL;
	for (int i = 0; i < n; i++)
		for (size_t done = 0; done < r[i].len;) {
			size_t left = r[i].len - done, want = left < (1u << 30) ? left : (1u << 30);
			ssize_t got = pread(fd, p + pad + r[i].off + done, want,
					    (off_t)(r[i].off + done));
			if (got <= 0) {
				int saved = errno;
				close(fd);
				err_set(e, "%s: %s", name, got < 0 ? strerror(saved)
								   : "file shrank while reading");
				return NULL;
			}
			done += (size_t)got;
		}
	close(fd);
	return p + pad;
}

/* Moves the validated file into anonymous memory, the data section 64-byte
 * aligned, and validates the copy (its views replace the mapping's). */
static int copy_file(struct model *m, const char *name, struct err *e)
{
	size_t pad = (COPY_ALIGN - m->st.data_offset % COPY_ALIGN) % COPY_ALIGN;
	size_t size = m->st.map.size;
	unsigned char *p = model_anon_read(m, name, size, pad, e);
	if (!p)
		return -1;
	st_close(&m->st);
	return st_parse(&m->st, p, size, name, e);
}

/* The same for a container (already 64-byte aligned inside). */
static int copy_container(struct model *m, const char *name, struct err *e)
{
	size_t size = m->qf->size;
	unsigned char *p = model_anon_read(m, name, size, 0, e);
	if (!p)
		return -1;
	qfile_close(m->qf);
	return qfile_parse(m->qf, p, size, name, e);
}

/* Views and widened copies. */
struct filler {
	struct model *m;
	const char *name;
	float *vec;    /* next free float in m->vecs */
	float *wide;   /* next free float in m->wide, or NULL */
	struct err *e;
};

/* A tensor of either kind of file. */
struct tview {
	enum wtype type;
	int ndim;
	int64_t shape[2];
	uint64_t nelem;
	const void *data;
	const float *scales;  /* WT_Q8, WT_Q4 */
};

static int get(struct filler *f, const char *fmt, int layer, struct tview *v)
{
	char name[256];
	snprintf(name, sizeof name, fmt, layer);
	/* The manifest check guarantees presence and shape. */
	if (f->m->qf) {
		const struct qtensor *t = qfile_find(f->m->qf, name);
		*v = (struct tview){
			.type = t->type, .ndim = t->ndim, .shape = { t->shape[0], t->shape[1] },
			.nelem = (uint64_t)t->shape[0] * (t->ndim == 2 ? (uint64_t)t->shape[1] : 1),
			.data = t->data, .scales = t->scales,
		};
		return 0;
	}
	const struct st_tensor *t = st_find(&f->m->st, name);
	if (dtype_ok(t, f->name, f->e) < 0)
		return -1;
	*v = (struct tview){
		.type = t->dtype == ST_BF16 ? WT_BF16 : WT_F32, .ndim = t->ndim,
		.shape = { t->shape[0], t->ndim == 2 ? t->shape[1] : 0 }, .nelem = t->nelem,
		.data = t->data,
	};
	return 0;
}

static int matrix(struct filler *f, struct wmat *w, const char *fmt, int layer)
{
	struct tview t;
	if (get(f, fmt, layer, &t) < 0)
		return -1;
	*w = (struct wmat){
		.type = t.type,
		.rows = (int)t.shape[0],
		.cols = (int)t.shape[1],
		.data = t.data,
		.scales = t.scales,
		.group_size = t.type == WT_Q4 ? f->m->qf->group_size : 0,
	};
	size_t n = (size_t)w->rows * w->cols;
	if (f->wide) {  /* only for safetensors (f32 or bf16) */
		if (w->type == WT_BF16) {
			const uint16_t *s = t.data;
			for (size_t i = 0; i < n; i++)
				f->wide[i] = bf16_to_f32(s[i]);
		} else {
			memcpy(f->wide, t.data, n * sizeof(float));
		}
		w->type = WT_F32;
		w->data = f->wide;
		f->wide += n;
	}
	f->m->weight_bytes += wmat_bytes(w);
	return 0;
}

static int vector(struct filler *f, const float **out, const char *fmt, int layer)
{
	struct tview t;
	if (get(f, fmt, layer, &t) < 0)
		return -1;
	for (uint64_t i = 0; i < t.nelem; i++)
		f->vec[i] = t.type == WT_BF16 ? bf16_to_f32(((const uint16_t *)t.data)[i])
					      : ((const float *)t.data)[i];
	*out = f->vec;
	f->vec += t.nelem;
	return 0;
}

static int fill(struct model *m, const char *name, int f32, struct err *e)
{
	const struct model_config *c = &m->cfg;
	size_t nvec = 0, nmat = 0;
	int nt = m->qf ? m->qf->ntensors : m->st.ntensors;
	for (int i = 0; i < nt; i++) {
		int ndim = m->qf ? m->qf->t[i].ndim : m->st.tensors[i].ndim;
		const int64_t *shape = m->qf ? m->qf->t[i].shape : m->st.tensors[i].shape;
		if (ndim == 1)
			nvec += (size_t)shape[0];
		else
			nmat += (size_t)shape[0] * (size_t)shape[1];
	}
	m->vecs = malloc(sizeof(float) * nvec);
	m->w.layers = calloc((size_t)c->n_layers, sizeof *m->w.layers);
	if (f32) {
		m->wide_bytes = sizeof(float) * nmat;
		m->wide = anon_alloc(m->wide_bytes);
	}
	if (!m->vecs || !m->w.layers || (f32 && !m->wide))
		return err_set(e, "%s: out of memory", name);
	struct filler f = { .m = m, .name = name, .vec = m->vecs, .wide = m->wide, .e = e };
	if (matrix(&f, &m->w.embed, "model.embed_tokens.weight", 0) < 0)
		return -1;
	for (int l = 0; l < c->n_layers; l++) {
		struct layer_weights *L = &m->w.layers[l];
		if (vector(&f, &L->attn_norm, "model.layers.%d.input_layernorm.weight", l) < 0 ||
		    matrix(&f, &L->wq, "model.layers.%d.self_attn.q_proj.weight", l) < 0 ||
		    vector(&f, &L->bq, "model.layers.%d.self_attn.q_proj.bias", l) < 0 ||
		    matrix(&f, &L->wk, "model.layers.%d.self_attn.k_proj.weight", l) < 0 ||
		    vector(&f, &L->bk, "model.layers.%d.self_attn.k_proj.bias", l) < 0 ||
		    matrix(&f, &L->wv, "model.layers.%d.self_attn.v_proj.weight", l) < 0 ||
		    vector(&f, &L->bv, "model.layers.%d.self_attn.v_proj.bias", l) < 0 ||
		    matrix(&f, &L->wo, "model.layers.%d.self_attn.o_proj.weight", l) < 0 ||
		    vector(&f, &L->mlp_norm, "model.layers.%d.post_attention_layernorm.weight", l) < 0 ||
		    matrix(&f, &L->gate, "model.layers.%d.mlp.gate_proj.weight", l) < 0 ||
		    matrix(&f, &L->up, "model.layers.%d.mlp.up_proj.weight", l) < 0 ||
		    matrix(&f, &L->down, "model.layers.%d.mlp.down_proj.weight", l) < 0)
			return -1;
	}
	if (vector(&f, &m->w.final_norm, "model.norm.weight", 0) < 0)
		return -1;
	if (c->tie_embeddings)
		m->w.lm_head = m->w.embed;
	else if (matrix(&f, &m->w.lm_head, "lm_head.weight", 0) < 0)
		return -1;
	return model_interleave(m, e);
}

int model_matrices(struct model *m, struct wmat **w, const char **names)
{
	int n = 0;
	w[n] = &m->w.embed;
	names[n++] = QF_EMBED_NAME;
	for (int l = 0; l < m->cfg.n_layers; l++) {
		struct layer_weights *L = &m->w.layers[l];
		struct wmat *ws[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down };
		for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
			w[n] = ws[i];
			names[n++] = "model.layers.*";
		}
	}
	if (!m->cfg.tie_embeddings) {
		w[n] = &m->w.lm_head;
		names[n++] = "lm_head.weight";
	}
	return n;
}

int model_interleave(struct model *m, struct err *e)
{
	if ((!m->copied && !m->wide) || !cpu_amd_family())
		return 0;
	struct wmat *ws[MODEL_MATRICES(m->cfg.n_layers)];
	const char *names[MODEL_MATRICES(m->cfg.n_layers)];
	int n = model_matrices(m, ws, names);
	int panels = cpu_level_env(NULL) == CPU_AVX512;
	for (int i = 0; i < n; i++)
		if (wmat_can_interleave(ws[i]) &&
		    kern_interleave(ws[i], (void *)ws[i]->data, panels) < 0)
			return err_set(e, "out of memory");
	if (m->cfg.tie_embeddings)
		m->w.lm_head = m->w.embed;
	return 0;
}

/* Gives back the whole pages inside [p, p + n): memory read once, for
 * repacking, and never again (a mapping's pages just leave the resident
 * set). */
static void release(const void *p, size_t n)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + pg - 1) / pg * pg, hi = ((uintptr_t)p + n) / pg * pg;
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Rows tile_matrices packs before it gives their pages back (a multiple
 * of QTILE_ROWS, of BTILE_ROWS and of 4, the interleaved rows' blocks). */
#define TILE_PART 1024

/* The two repackings: integer matrices for int8 activations (qtile.h),
 * bf16 ones for bf16 activations (btile.h). */
enum tiling { TILE_INT, TILE_BF16 };

static int tiling_takes(enum tiling k, const struct wmat *w)
{
	return !w->tiled && (k == TILE_INT ? wmat_qtileable(w) : w->type == WT_BF16);
}

/* How k holds w (s: the scales, for TILE_INT): its bytes, rows r0 .. r1
 * packed into the area at p, and the view of the packed matrix. */
static size_t tiled_bytes(enum tiling k, const struct wmat *w, enum qtile_scales s)
{
	return k == TILE_INT ? qtile_bytes(w->type, w->rows, w->cols, s)
			     : btile_bytes(w->rows, w->cols);
}

static void tiled_pack_rows(enum tiling k, const struct wmat *w, enum qtile_scales s, void *p,
			    int r0, int r1)
{
	if (k == TILE_INT)
		qtile_pack_rows(w, s, p, r0, r1);
	else
		btile_pack_rows(w, p, r0, r1);
}

static void tiled_view(enum tiling k, const struct wmat *w, enum qtile_scales s, void *p,
		       struct wmat *t)
{
	if (k == TILE_INT)
		qtile_view(w, s, p, t);
	else
		btile_view(w, p, t);
}

/* Repacks the matrices k takes into anonymous memory (*area, *size), in
 * parts of TILE_PART rows, each given back once packed, so that a large
 * matrix (an embedding) is not resident twice. */
static int tile_matrices(struct model *m, enum tiling k, void **area, size_t *size,
			 struct err *e)
{
	struct wmat *ws[MODEL_MATRICES(m->cfg.n_layers)];
	const char *names[MODEL_MATRICES(m->cfg.n_layers)];
	enum qtile_scales sc[MODEL_MATRICES(m->cfg.n_layers)];
	int n = model_matrices(m, ws, names);
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		sc[i] = QT_ROW;
		if (!tiling_takes(k, ws[i]))
			continue;
		if (k == TILE_INT)
			sc[i] = qtile_scales_for(ws[i]);  /* a scan of its scales: once */
		total += tiled_bytes(k, ws[i], sc[i]);
	}
	if (total == 0)
		return 0;
	unsigned char *p = anon_alloc(total);
	if (!p)
		return err_set(e, "cannot allocate %zu bytes for the %s-activation layout: %s",
			       total, k == TILE_INT ? "int8" : "bf16", strerror(errno));
	*area = p;
	*size = total;
	for (int i = 0; i < n; i++) {
		struct wmat *w = ws[i];
		if (!tiling_takes(k, w))
			continue;
		size_t codes = wmat_data_bytes(w), scales = wmat_bytes(w) - codes;
		for (int r = 0; r < w->rows; r += TILE_PART) {
			int r1 = w->rows - r < TILE_PART ? w->rows : r + TILE_PART;
			tiled_pack_rows(k, w, sc[i], p, r, r1);
			release(w->data, codes / (size_t)w->rows * (size_t)r1);
			if (scales)
				release(w->scales, scales / (size_t)w->rows * (size_t)r1);
		}
		struct wmat t;
		tiled_view(k, w, sc[i], p, &t);
		m->weight_bytes += wmat_bytes(&t) - wmat_bytes(w);
		*w = t;
		p += wmat_bytes(&t);
	}
	if (m->cfg.tie_embeddings)
		m->w.lm_head = m->w.embed;
	return 0;
}

int model_tile(struct model *m, struct err *e)
{
	return tile_matrices(m, TILE_INT, &m->tiles, &m->tiles_size, e);
}

int model_tile_b16(struct model *m, struct err *e)
{
	return tile_matrices(m, TILE_BF16, &m->btiles, &m->btiles_size, e);
}

/* The generation defaults' EOS ids must be tokens of the model. */
int model_check_eos(const struct model *m, const char *name, struct err *e)
{
	for (int i = 0; i < m->gen.n_eos; i++)
		if (m->gen.eos_ids[i] >= m->cfg.vocab_size)
			return err_set(e, "%s: eos_token_id %d is outside the vocabulary "
				       "(%d)", name, m->gen.eos_ids[i], m->cfg.vocab_size);
	return 0;
}

/* A quantized container (lib/format/qfile.h): validated whole by qfile_open,
 * config and generation defaults embedded. */
static int load_container(struct model *m, const char *path, const struct model_opts *o,
			  struct err *e)
{
	if (o->f32)
		return err_set(e, "%s: a quantized container cannot be widened to "
			       "float32 (--f32 needs a safetensors model)", path);
	m->qf = malloc(sizeof *m->qf);
	if (!m->qf)
		return err_set(e, "%s: out of memory", path);
	if (qfile_open(m->qf, path, e) < 0) {
		free(m->qf);
		m->qf = NULL;
		return -1;
	}
	m->cfg = m->qf->cfg;
	m->gen = m->qf->gen;
	if (model_check_eos(m, path, e) < 0 || (!o->mmap && copy_container(m, path, e) < 0) ||
	    fill(m, path, 0, e) < 0) {
		model_free(m);
		return -1;
	}
	return 0;
}

int model_load(struct model *m, const char *path, const struct model_opts *o,
	       struct err *e)
{
	memset(m, 0, sizeof *m);
	struct modelpath p;
	if (modelpath_resolve(&p, path, e) < 0)
		return -1;
	if (p.kind == MODELPATH_CONTAINER)
		return load_container(m, p.weights, o, e);
	if (p.kind == MODELPATH_GGUF)
		return model_load_gguf(m, p.weights, o, e);
	/* the weights file first: given something that is not a model, say
	 * so, rather than that no config.json is beside it */
	if (st_open(&m->st, p.weights, e) < 0)
		return -1;
	if (config_load(&m->cfg, p.config, e) < 0) {
		model_free(m);
		return -1;
	}
	gen_config_default(&m->gen, &m->cfg);
	/* without the file, transformers' defaults as from an empty one */
	if ((access(p.gen, F_OK) == 0 ? gen_config_load(&m->gen, p.gen, e) :
	     gen_config_parse(&m->gen, "{}", 2, p.gen, e)) < 0 ||
	    model_check_eos(m, p.gen, e) < 0 || check_manifest(m, p.weights, e) < 0 ||
	    ((!(o->mmap || o->f32) || !aligned(&m->st)) && copy_file(m, p.weights, e) < 0) ||
	    fill(m, p.weights, o->f32, e) < 0) {
		model_free(m);
		return -1;
	}
	return 0;
}

void model_free(struct model *m)
{
	st_close(&m->st);
	if (m->qf) {
		qfile_close(m->qf);
		free(m->qf);
	}
	if (m->gg) {
		gguf_close(m->gg);
		free(m->gg);
	}
	if (m->owned)
		munmap(m->owned, m->owned_size);
	free(m->quant);
	if (m->copy)
		munmap(m->copy, m->copy_size);
	if (m->tiles)
		munmap(m->tiles, m->tiles_size);
	if (m->btiles)
		munmap(m->btiles, m->btiles_size);
	free(m->vecs);
	if (m->wide)
		munmap(m->wide, m->wide_bytes);
	free(m->w.layers);
	memset(m, 0, sizeof *m);
}
