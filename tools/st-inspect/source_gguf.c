/* source_gguf: GGUF files (llama.cpp's) for st-inspect (lib/format/gguf.h
 * does the work). Tensors are listed under their GGUF names with their
 * GGUF types; the manifest (what the summary diffs) holds Hugging Face's
 * names and PyTorch-order shapes (lib/format/gguf_arch.h), so a qwen2 file
 * is diffed against the config its own qwen2.* keys give. A file of
 * another architecture is still shown, without a config. Every metadata
 * key is listed, arrays summarised. Statistics of a quantized tensor are
 * those of its values dequantized exactly. */
#include "source.h"
#include "format/gguf.h"
#include "format/gguf_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gguf_source {
	struct gguf_file f;
	struct model_config cfg;
	char format[32];
	char **keys, **vals;
};

static int gguf_stats(const struct source *s, int i, struct tstats *st, struct err *e)
{
	const struct gguf_source *g = s->impl;
	const struct gguf_tensor *t = &g->f.t[i];
	if (!gguf_can_dequant(t->type))
		return err_set(e, "%s: tensor '%s': type %s cannot be read", s->path, t->name,
			       gguf_ttype_name(t->type));
	float *v = malloc(sizeof(float) * (size_t)t->nelem);
	if (!v)
		return err_set(e, "%s: tensor '%s': out of memory", s->path, t->name);
	gguf_dequant(t->type, t->data, t->nelem, v);
	tstats_compute(st, v, ST_F32, t->nelem);
	free(v);
	return 0;
}

static void gguf_source_close(struct source *s)
{
	struct gguf_source *g = s->impl;
	for (int i = 0; g->keys && g->vals && i < g->f.nkv; i++) {
		free(g->keys[i]);
		free(g->vals[i]);
	}
	free(g->keys);
	free(g->vals);
	gguf_close(&g->f);
	free(g);
	free(s->t);
}

int source_open_gguf(struct source *s, const char *path, struct err *e)
{
	if (!gguf_sniff(path))
		return 1;
	struct gguf_source *g = calloc(1, sizeof *g);
	if (!g)
		return err_set(e, "out of memory");
	if (gguf_open(&g->f, path, e) < 0) {
		free(g);
		return -1;
	}
	const struct gguf_file *f = &g->f;
	s->impl = g;
	s->close = gguf_source_close;
	s->stats = gguf_stats;
	s->path = path;
	snprintf(g->format, sizeof g->format, "GGUF v%u", (unsigned)f->version);
	s->format = g->format;
	s->file_size = f->size;
	s->data_offset = f->data_offset;
	s->header_size = f->data_offset;
	/* a qwen2 file must give a whole config; another architecture none */
	const struct gguf_kv *arch = gguf_find_kv(f, "general.architecture");
	if (arch && arch->type == GGUF_STRING && arch->slen == 5 &&
	    memcmp(arch->s, "qwen2", 5) == 0) {
		struct gen_config gen;
		if (gguf_qwen2_config(f, path, &g->cfg, &gen, e) < 0) {
			source_close(s);
			return -1;
		}
		s->config = &g->cfg;
	}
	g->keys = calloc((size_t)f->nkv + 1, sizeof *g->keys);
	g->vals = calloc((size_t)f->nkv + 1, sizeof *g->vals);
	s->t = calloc((size_t)f->ntensors + 1, sizeof *s->t);
	if (!g->keys || !g->vals || !s->t) {
		source_close(s);
		return err_set(e, "out of memory");
	}
	for (int i = 0; i < f->nkv; i++) {
		char v[512];
		gguf_kv_text(&f->kv[i], v, sizeof v);
		g->keys[i] = strdup(f->kv[i].key);
		g->vals[i] = strdup(v);
		if (!g->keys[i] || !g->vals[i]) {
			source_close(s);
			return err_set(e, "out of memory");
		}
	}
	s->nmeta = f->nkv;
	s->meta_keys = g->keys;
	s->meta_vals = g->vals;
	if (manifest_from_gguf(&s->tensors, f, e) < 0) {
		source_close(s);
		return -1;
	}
	s->n = f->ntensors;
	for (int i = 0; i < f->ntensors; i++)
		s->t[i] = (struct src_tensor){
			.name = f->t[i].name,
			.dtype = gguf_ttype_name(f->t[i].type),
			.offset = f->data_offset + f->t[i].offset,
			.bytes = f->t[i].bytes,
		};
	return 0;
}
