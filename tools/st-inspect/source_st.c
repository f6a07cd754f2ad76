/* source_st: .safetensors files for st-inspect (lib/format/safetensors.h does the
 * work). Any file that is not one of the other kinds is read as
 * safetensors, so that a bad one gets the reader's precise message. */
#include "source.h"
#include "format/safetensors.h"

#include <stdlib.h>

static int st_stats(const struct source *s, int i, struct tstats *st, struct err *e)
{
	const struct st_file *f = s->impl;
	const struct st_tensor *t = &f->tensors[i];  /* s->t is parallel */
	tstats_compute(st, t->data, t->dtype, t->nelem);
	return 0;
}

static void st_source_close(struct source *s)
{
	st_close(s->impl);
	free(s->impl);
	free(s->t);
}

int source_open_st(struct source *s, const char *path, struct err *e)
{
	struct st_file *f = malloc(sizeof *f);
	if (!f)
		return err_set(e, "out of memory");
	if (st_open(f, path, e) < 0) {
		free(f);
		return -1;
	}
	s->impl = f;
	s->close = st_source_close;
	s->stats = st_stats;
	s->path = path;
	s->format = "safetensors";
	s->file_size = f->map.size;
	s->header_size = f->header_len;
	s->data_offset = f->data_offset;
	s->nmeta = f->nmeta;
	s->meta_keys = f->meta_keys;
	s->meta_vals = f->meta_vals;
	s->t = calloc((size_t)f->ntensors + 1, sizeof *s->t);
	if (!s->t || manifest_from_st(&s->tensors, f, e) < 0) {
		source_close(s);
		return err_set(e, "out of memory");
	}
	s->n = f->ntensors;
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		s->t[i] = (struct src_tensor){
			.name = t->name,
			.dtype = st_dtype_name(t->dtype),
			.offset = f->data_offset + t->begin,
			.bytes = t->end - t->begin,
		};
	}
	return 0;
}
