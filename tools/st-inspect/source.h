/* source: one model file as st-inspect sees it, whatever its kind.
 *
 * st-inspect prints, diffs and scans a `struct source`; each file kind
 * fills one in (source_st.c for .safetensors). A new kind adds its own
 * source_<kind>.c with an open function and one line in source_open's table
 * (source.c); nothing else in the tool changes.
 */
#ifndef SOURCE_H
#define SOURCE_H

#include <stdint.h>
#include "format/config.h"
#include "core/err.h"
#include "format/manifest.h"
#include "tstats.h"

struct src_tensor {
	const char *name;     /* owned by the kind's implementation */
	const char *dtype;    /* as the file names it: "BF16", ... */
	uint64_t offset;      /* of the first byte, from the start of the file */
	uint64_t bytes;
};

struct source {
	const char *path;
	const char *format;        /* "safetensors", "GGUF v3", ... */
	uint64_t file_size;
	uint64_t header_size;      /* bytes of header before the data */
	uint64_t data_offset;      /* where the tensor data starts */
	int n;                     /* tensors */
	struct src_tensor *t;      /* n of them, parallel to tensors.t */
	struct manifest tensors;   /* names and shapes */
	const struct model_config *config; /* embedded in the file, or NULL */
	int nmeta;                 /* key/value metadata stored in the file */
	char *const *meta_keys, *const *meta_vals;
	/* Statistics of tensor i: reads its data. */
	int (*stats)(const struct source *s, int i, struct tstats *st, struct err *e);
	void (*close)(struct source *s);
	void *impl;
};

/* Opens path, of whatever kind it is. On failure fills e ("path: problem")
 * and leaves nothing to free; on success the caller calls source_close. */
int source_open(struct source *s, const char *path, struct err *e);

void source_close(struct source *s);

/* The index of the tensor named name in the file, or else in the manifest
 * (a GGUF tensor by its Hugging Face name), or -1. */
int source_find(const struct source *s, const char *name);

/* Each kind's opener: 1 when path is not of this kind (nothing done), 0
 * when it opened it, -1 with e filled when it is of this kind but bad. */
int source_open_st(struct source *s, const char *path, struct err *e);
int source_open_qf(struct source *s, const char *path, struct err *e);
int source_open_gguf(struct source *s, const char *path, struct err *e);

#endif
