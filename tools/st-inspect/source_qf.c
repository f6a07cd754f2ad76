/* source_qf: the quantized containers (.q8, .q4) for st-inspect
 * (lib/format/qfile.h does the work). The scheme is shown as metadata; the config
 * embedded in the container is what the summary diffs against. Statistics
 * of an int8 or int4 tensor are those of its dequantized values. */
#include "source.h"
#include "format/qfile.h"
#include "kernels/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QF_NMETA 4

struct qf_source {
	struct qfile f;
	char *keys[QF_NMETA], *vals[QF_NMETA];
};

static int qf_stats(const struct source *s, int i, struct tstats *st, struct err *e)
{
	const struct qf_source *q = s->impl;
	const struct qtensor *t = &q->f.t[i];
	if (t->type == WT_F32 || t->type == WT_BF16) {
		uint64_t n = (uint64_t)t->shape[0] * (t->ndim == 2 ? (uint64_t)t->shape[1] : 1);
		tstats_compute(st, t->data, t->type == WT_F32 ? ST_F32 : ST_BF16, n);
		return 0;
	}
	struct wmat w = qtensor_wmat(&q->f, t);
	float *v = malloc(sizeof(float) * (size_t)w.rows * (size_t)w.cols);
	if (!v)
		return err_set(e, "%s: tensor '%s': out of memory", s->path, t->name);
	for (int r = 0; r < w.rows; r++)
		quant_dequant_row(&w, r, 0, w.cols, v + (size_t)r * w.cols);
	tstats_compute(st, v, ST_F32, (uint64_t)w.rows * (uint64_t)w.cols);
	free(v);
	return 0;
}

static void qf_source_close(struct source *s)
{
	struct qf_source *q = s->impl;
	qfile_close(&q->f);
	for (int i = 0; i < QF_NMETA; i++) {
		free(q->keys[i]);
		free(q->vals[i]);
	}
	free(q);
	free(s->t);
}

static const char *const dtype_names[] = { "F32", "BF16", "INT8", "INT4" };

int source_open_qf(struct source *s, const char *path, struct err *e)
{
	if (!qfile_sniff(path))
		return 1;
	struct qf_source *q = calloc(1, sizeof *q);
	if (!q)
		return err_set(e, "out of memory");
	if (qfile_open(&q->f, path, e) < 0) {
		free(q);
		return -1;
	}
	const struct qfile *f = &q->f;
	s->impl = q;
	s->close = qf_source_close;
	s->stats = qf_stats;
	s->path = path;
	s->format = f->level == 8 ? "qwenpipe container, int8" : "qwenpipe container, int4";
	s->file_size = f->size;
	s->config = &f->cfg;
	s->header_size = f->ntensors ? f->t[0].data_off : f->size;
	s->data_offset = s->header_size;
	char vals[QF_NMETA][64];
	static const char *const keys[QF_NMETA] = { "level", "group_size", "embeddings", "tokenizer" };
	snprintf(vals[0], sizeof vals[0], "int%d", f->level);
	snprintf(vals[1], sizeof vals[1], "%d", f->group_size);
	snprintf(vals[2], sizeof vals[2], "%s", f->embeddings ? "quantized" : "kept");
	snprintf(vals[3], sizeof vals[3], f->tokenizer_len ? "embedded, %zu bytes" : "none",
		 f->tokenizer_len);
	for (int i = 0; i < QF_NMETA; i++) {
		q->keys[i] = strdup(keys[i]);
		q->vals[i] = strdup(vals[i]);
	}
	s->nmeta = QF_NMETA;
	s->meta_keys = q->keys;
	s->meta_vals = q->vals;
	s->t = calloc((size_t)f->ntensors + 1, sizeof *s->t);
	if (!s->t || !q->keys[QF_NMETA - 1] || !q->vals[QF_NMETA - 1]) {
		source_close(s);
		return err_set(e, "out of memory");
	}
	s->n = f->ntensors;
	for (int i = 0; i < f->ntensors; i++) {
		const struct qtensor *t = &f->t[i];
		if (manifest_add(&s->tensors, t->name, t->ndim, t->shape, e) < 0) {
			source_close(s);
			return -1;
		}
		uint64_t end = t->scales ? t->scales_off +
			qfile_scales_len(t->type, t->shape, f->group_size) : t->data_off + t->data_len;
		s->t[i] = (struct src_tensor){
			.name = t->name,
			.dtype = dtype_names[t->type],
			.offset = t->data_off,
			.bytes = end - t->data_off,
		};
	}
	return 0;
}
