/* modelfile: one of the JSON files that go with a model (config.json,
 * generation_config.json, tokenizer.json, tokenizer_config.json), from
 * wherever the model keeps it.
 *
 * A model path (told apart by lib/format/modelpath.h) is a directory (the
 * file is PATH/NAME), a container (lib/format/qfile.h: config.json, generation_config.json and
 * tokenizer.json are embedded, so the container alone is enough; it
 * carries no other file), or any other file, which is taken to be the file
 * itself (tok --tokenizer path/to/tokenizer.json). The text layer parses
 * what this returns (tok_parse), so that `tok --tokenizer model.q8` reads
 * the tokenizer the container was made with.
 */
#ifndef MODELFILE_H
#define MODELFILE_H

#include <stddef.h>
#include "core/err.h"
#include "core/mapfile.h"

struct qfile;

struct model_file {
	const unsigned char *data;  /* the file's bytes (not NUL-terminated) */
	size_t size;
	char name[4200];            /* for messages: the path, or "C (embedded NAME)" */
	struct mapfile map;         /* when read from a file */
	struct qfile *qf;           /* when read from a container */
};

/* Opens file `name` of the model at path. On failure fills e with
 * "path: problem" ("m.q8: a container carries no tokenizer_config.json");
 * on success the caller frees with model_file_close. */
int model_file_open(struct model_file *f, const char *path, const char *name,
		    struct err *e);

void model_file_close(struct model_file *f);

#endif
