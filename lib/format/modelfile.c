/* modelfile: see modelfile.h. */
#include "format/modelfile.h"
#include "format/modelpath.h"
#include "format/qfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int model_file_open(struct model_file *f, const char *path, const char *name,
		    struct err *e)
{
	memset(f, 0, sizeof *f);
	struct modelpath mp;
	if (modelpath_resolve(&mp, path, e) < 0)
		return -1;
	if (mp.kind == MODELPATH_CONTAINER) {
		const struct qfile *q;
		if (!(f->qf = malloc(sizeof *f->qf)))
			return err_set(e, "out of memory");
		if (qfile_open(f->qf, path, e) < 0) {
			free(f->qf);
			f->qf = NULL;
			return -1;
		}
		q = f->qf;
		if (!strcmp(name, "config.json"))
			f->data = (const unsigned char *)q->config_json, f->size = q->config_len;
		else if (!strcmp(name, "generation_config.json"))
			f->data = (const unsigned char *)q->gen_json, f->size = q->gen_len;
		else if (!strcmp(name, "tokenizer.json"))
			f->data = (const unsigned char *)q->tokenizer_json, f->size = q->tokenizer_len;
		else {
			model_file_close(f);
			return err_set(e, "%s: a container carries no %s (only config.json, "
				       "generation_config.json and tokenizer.json)", path, name);
		}
		snprintf(f->name, sizeof f->name, "%.4000s (embedded %s)", path, name);
		return 0;
	}
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(f->name, sizeof f->name, "%.4000s/%s", path, name);
	else
		snprintf(f->name, sizeof f->name, "%.4000s", path);
	if (mapfile_open(&f->map, f->name, e) < 0)
		return -1;
	f->data = f->map.data;
	f->size = f->map.size;
	return 0;
}

void model_file_close(struct model_file *f)
{
	if (f->qf) {
		qfile_close(f->qf);
		free(f->qf);
	} else {
		mapfile_close(&f->map);
	}
	memset(f, 0, sizeof *f);
}
