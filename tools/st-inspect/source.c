/* source: see source.h. */
#include "source.h"

#include <string.h>

/* The kinds st-inspect reads, tried in order. */
static int (*const openers[])(struct source *, const char *, struct err *) = {
	source_open_qf,
	source_open_gguf,
	source_open_st,
};

int source_open(struct source *s, const char *path, struct err *e)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < sizeof openers / sizeof openers[0]; i++) {
		int rc = openers[i](s, path, e);
		if (rc <= 0)
			return rc;
	}
	return err_set(e, "%s: not a model file of a known kind", path);
}

void source_close(struct source *s)
{
	manifest_free(&s->tensors);
	if (s->close)
		s->close(s);
}

int source_find(const struct source *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->t[i].name, name) == 0)
			return i;
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->tensors.t[i].name, name) == 0)
			return i;
	return -1;
}
