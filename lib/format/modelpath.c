/* modelpath: see modelpath.h. */
#include "format/modelpath.h"
#include "core/path.h"
#include "format/gguf.h"
#include "format/qfile.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int modelpath_resolve(struct modelpath *p, const char *path, struct err *e)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		return err_set(e, "%s: %s", path, strerror(errno));
	if (S_ISDIR(sb.st_mode)) {
		if (path_join(p->weights, sizeof p->weights, path, "model.safetensors", e) < 0)
			return -1;
	} else if (strlen(path) >= sizeof p->weights) {
		return err_set(e, "%.200s: path too long", path);
	} else {
		strcpy(p->weights, path);
	}
	p->kind = qfile_sniff(p->weights) ? MODELPATH_CONTAINER :
		  gguf_sniff(p->weights) ? MODELPATH_GGUF : MODELPATH_SAFETENSORS;
	if (path_beside(p->config, sizeof p->config, p->weights, "config.json", e) < 0 ||
	    path_beside(p->gen, sizeof p->gen, p->weights, "generation_config.json", e) < 0 ||
	    path_beside(p->tokenizer, sizeof p->tokenizer, p->weights, "tokenizer.json", e) < 0)
		return -1;
	return 0;
}
