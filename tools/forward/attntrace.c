/* attntrace: see attntrace.h. */
#include "attntrace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void attn_trace_init(struct attn_trace *t, FILE *fp, int n_layers, int n_heads)
{
	memset(t, 0, sizeof *t);
	t->fp = fp;
	t->n_layers = n_layers;
	t->n_heads = n_heads;
}

int attn_trace_begin(struct attn_trace *t, int p0, int n, struct err *e)
{
	size_t need = (size_t)t->n_layers * (size_t)n * (size_t)t->n_heads *
		      (size_t)(p0 + n);
	if (need > t->cap) {
		float *w = realloc(t->w, need * sizeof *w);
		if (!w)
			return err_set(e, "out of memory for the attention trace "
				       "(%zu bytes)", need * sizeof *w);
		t->w = w;
		t->cap = need;
	}
	t->p0 = p0;
	t->n = n;
	return 0;
}

/* The row of (layer, position p0 + t, head). */
static float *row(const struct attn_trace *t, int layer, int i, int head)
{
	size_t keys = (size_t)(t->p0 + t->n);
	return t->w + (((size_t)layer * t->n + i) * t->n_heads + head) * keys;
}

void attn_trace_record(void *arg, int layer, int pos, int head, const float *w,
		       int n)
{
	struct attn_trace *t = arg;
	memcpy(row(t, layer, pos - t->p0, head), w, sizeof *w * (size_t)n);
}

int attn_trace_write(struct attn_trace *t, struct err *e)
{
	for (int l = 0; l < t->n_layers; l++)
		for (int i = 0; i < t->n; i++) {
			int pos = t->p0 + i;
			fprintf(t->fp, "{\"call\":%ld,\"layer\":%d,\"pos\":%d,\"w\":[",
				t->call, l, pos);
			for (int h = 0; h < t->n_heads; h++) {
				const float *w = row(t, l, i, h);
				fputs(h ? ",[" : "[", t->fp);
				for (int k = 0; k <= pos; k++)
					fprintf(t->fp, k ? ",%.9g" : "%.9g", w[k]);
				fputc(']', t->fp);
			}
			fputs("]}\n", t->fp);
		}
	t->call++;
	if (ferror(t->fp))
		return err_write(e, errno, "write error");
	return 0;
}

void attn_trace_free(struct attn_trace *t)
{
	free(t->w);
	t->w = NULL;
	t->cap = 0;
}
