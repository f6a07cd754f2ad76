/* modelpath: the files of a model, from the one name a user gives.
 *
 * Every tool takes a model the same ways: a directory holding
 * model.safetensors, config.json, generation_config.json and
 * tokenizer.json; a .safetensors file (any name) with those beside it; or
 * a quantized container (lib/format/qfile.h: .q8, .q4), known by its
 * magic, which holds its config and generation defaults itself; or a GGUF
 * file (llama.cpp's, lib/format/gguf.h: named *.gguf or with its magic),
 * which holds its config, generation defaults and tokenizer. New kinds
 * of model file are told apart here, and only here.
 */
#ifndef MODELPATH_H
#define MODELPATH_H

#include <limits.h>

#include "core/err.h"

enum modelpath_kind {
	MODELPATH_SAFETENSORS,  /* weights: a .safetensors; the rest beside it */
	MODELPATH_CONTAINER,    /* weights: a quantized container, self-contained */
	MODELPATH_GGUF,         /* weights: a GGUF file (lib/format/gguf.h), self-contained */
};

struct modelpath {
	enum modelpath_kind kind;
	char weights[PATH_MAX];    /* the file the weights are in */
	/* beside the weights (for a container too: a tokenizer.json next to
	 * it is the tokenizer); none of them need exist */
	char config[PATH_MAX];     /* config.json */
	char gen[PATH_MAX];        /* generation_config.json */
	char tokenizer[PATH_MAX];  /* tokenizer.json */
};

/* Resolves path (a directory or a file). Fails, with e "path: strerror",
 * only when path does not exist or the names do not fit: whether the
 * files are what they should be is for their readers to say. */
int modelpath_resolve(struct modelpath *p, const char *path, struct err *e);

#endif
