/* qmodel: see qmodel.h. */
#include "model/qmodel.h"
#include "format/qfile.h"
#include "kernels/quant.h"

#include <stdio.h>
#include <stdlib.h>

int model_quantize(struct model *m, const struct qscheme *s, struct err *e)
{
	size_t cap = (size_t)MODEL_MATRICES(m->cfg.n_layers);
	struct wmat **ws = malloc(sizeof *ws * cap);
	const char **names = malloc(sizeof *names * cap);
	int n = ws && names ? model_matrices(m, ws, names) : 0, rc = -1;
	int group = s->type == WT_Q4 ? s->group_size : 0;  /* int8: a scale per row */
	if (!ws || !names) {
		err_set(e, "out of memory");
		goto out;
	}
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		struct wmat *w = ws[i];
		if (!qfile_quantizes(names[i], 2, s->embeddings)) {
			ws[i] = NULL;
			continue;
		}
		if (s->type == WT_Q4 && q4_check_shape(w->cols, s->group_size, e) < 0)
			goto out;
		struct wmat q = { .type = s->type, .rows = w->rows, .cols = w->cols,
				  .group_size = group };
		total += (wmat_bytes(&q) + 63) / 64 * 64;
	}
	unsigned char *buf = aligned_alloc(64, total ? total : 64);
	if (!buf) {
		err_set(e, "out of memory");
		goto out;
	}
	free(m->quant);
	m->quant = buf;
	for (int i = 0; i < n; i++) {
		struct wmat *w = ws[i];
		if (!w)
			continue;
		struct wmat q = { .type = s->type, .rows = w->rows, .cols = w->cols,
				  .group_size = group };
		float *scales = (float *)(void *)(buf + (wmat_data_bytes(&q) + 63) / 64 * 64);
		quant_matrix(w, s->type, group, s->rtn, buf, scales);
		q.data = buf;
		q.scales = scales;
		m->weight_bytes -= wmat_bytes(w);
		m->weight_bytes += wmat_bytes(&q);
		*w = q;
		buf += (wmat_bytes(&q) + 63) / 64 * 64;
	}
	if (m->cfg.tie_embeddings)
		m->w.lm_head = m->w.embed;
	rc = 0;
out:
	free(ws);
	free(names);
	return rc;
}

const char *qscheme_name(const struct qscheme *s, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s", s->type == WT_Q8 ? "int8" : "int4",
		 s->type == WT_Q4 && s->rtn ? "-rtn" : "",
		 s->embeddings ? "+embed" : "");
	return buf;
}
