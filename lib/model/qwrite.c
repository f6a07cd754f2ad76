/* qwrite: see qwrite.h. */
#include "model/qwrite.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

#include <stdio.h>
#include <stdlib.h>

static enum wtype kept_type(const struct st_tensor *t)
{
	return t->dtype == ST_BF16 ? WT_BF16 : WT_F32;
}

/* quant_row_finite over every row of w. */
static int nonfinite(const struct wmat *w, const char *name, struct err *e)
{
	float row[w->cols];
	for (int r = 0; r < w->rows; r++) {
		kern_row_float(w, r, row);
		if (quant_row_finite(name, r, row, w->cols, e) < 0)
			return -1;
	}
	return 0;
}

int qwrite_plan(const struct st_file *st, const struct qwrite_opts *o,
		struct qfile_entry **out, struct err *e)
{
	int n = st->ntensors;
	struct qfile_entry *p = calloc((size_t)(n ? n : 1), sizeof *p);
	if (!p)
		return err_set(e, "out of memory");
	for (int i = 0; i < n; i++) {
		const struct st_tensor *t = &st->tensors[i];
		if (t->dtype != ST_BF16 && t->dtype != ST_F32) {
			err_set(e, "tensor '%s': dtype %s (BF16 and F32 can be quantized or kept)",
				t->name, st_dtype_name(t->dtype));
			free(p);
			return QWRITE_EDTYPE;
		}
		p[i] = (struct qfile_entry){ .name = t->name, .ndim = t->ndim, .type = kept_type(t),
			.shape = { t->shape[0], t->ndim == 2 ? t->shape[1] : 0 } };
		if (!qfile_quantizes(t->name, t->ndim, o->embeddings))
			continue;
		p[i].type = o->level == 8 ? WT_Q8 : WT_Q4;
		if (o->level == 4 && q4_check_shape((int)t->shape[1], o->group_size, e) < 0) {
			char why[sizeof e->msg];
			snprintf(why, sizeof why, "%s", e->msg);
			err_set(e, "%s of tensor '%s'", why, t->name);
			free(p);
			return QWRITE_EGROUP;
		}
	}
	*out = p;
	return 0;
}

int qwrite_model(const char *out, const struct st_file *st, const struct qfile_entry *p,
		 struct qfile_header *h, const struct qwrite_opts *o,
		 const struct qwrite_hooks *hooks, struct err *e)
{
	static const struct qwrite_hooks none = { 0 };
	if (!hooks)
		hooks = &none;
	h->level = o->level;
	h->group_size = o->level == 4 ? o->group_size : 0;
	h->embeddings = o->embeddings;
	int n = st->ntensors;
	struct qfile_writer w = { 0 };
	if (!o->dry_run && qfile_write_begin(&w, out, h, p, n, e) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const struct st_tensor *t = &st->tensors[i];
		struct qwrite_info info = { .t = t, .type = p[i].type,
					    .bytes_before = t->end - t->begin };
		uint64_t dl = qfile_data_len(p[i].type, p[i].ndim, p[i].shape);
		uint64_t sl = qfile_scales_len(p[i].type, p[i].shape, h->group_size);
		info.bytes_after = dl + sl;
		const void *data = t->data;
		void *qdata = NULL;
		float *scales = NULL;
		if (p[i].type == WT_Q8 || p[i].type == WT_Q4) {
			struct wmat src = { .type = kept_type(t), .rows = (int)t->shape[0],
					    .cols = (int)t->shape[1], .data = t->data };
			size_t ns = p[i].type == WT_Q8 ? (size_t)src.rows
						       : q4_nscales(src.rows, src.cols, h->group_size);
			qdata = malloc(dl);
			scales = malloc(ns * sizeof *scales);
			if (!qdata || !scales) {
				free(qdata);
				free(scales);
				err_set(e, "%s: out of memory", out);
				goto fail;
			}
			if (nonfinite(&src, t->name, e) < 0) {
				free(qdata);
				free(scales);
				goto fail;
			}
			quant_matrix(&src, p[i].type, h->group_size, 0, qdata, scales);
			if (o->rel_error) {
				struct wmat q = { .type = p[i].type, .rows = src.rows, .cols = src.cols,
						  .data = qdata, .scales = scales,
						  .group_size = h->group_size };
				info.rel_error = quant_rel_error(&src, &q);
			}
			data = qdata;
		}
		int bad = !o->dry_run && qfile_write_tensor(&w, data, scales, e) < 0;
		free(qdata);
		free(scales);
		if (bad || (hooks->tensor && hooks->tensor(hooks->arg, i, n, &info, e) != 0))
			goto fail;
	}
	return o->dry_run ? 0 : qfile_write_commit(&w, e);
fail:
	if (!o->dry_run)
		qfile_write_abort(&w);
	return -1;
}
