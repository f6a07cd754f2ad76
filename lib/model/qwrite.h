/* qwrite: a safetensors model written as a quantized container: the plan
 * (which tensor is stored how), the quantization and the atomic write of
 * lib/format/qfile.h. `quantize` is this plus flags and progress; `bench
 * --synthetic` makes its containers with it too.
 */
#ifndef QWRITE_H
#define QWRITE_H

#include <stdbool.h>
#include <stdint.h>
#include "core/err.h"
#include "format/qfile.h"
#include "format/safetensors.h"

struct qwrite_opts {
	int level;          /* 8 or 4 */
	int group_size;     /* int4 */
	bool embeddings;    /* quantize the embedding matrix too */
	bool dry_run;       /* quantize and report, write nothing */
	bool rel_error;     /* compute each tensor's relative weight error */
};

/* What happened to one tensor. */
struct qwrite_info {
	const struct st_tensor *t;
	enum wtype type;         /* as stored */
	double rel_error;        /* ||w - dequant|| / ||w|| (0 unless asked, or
				  * for a tensor kept as it was) */
	uint64_t bytes_before, bytes_after;
};

/* Hooks for the caller (any may be NULL): tensor is called after each
 * tensor, i of n. A non-zero return from tensor stops the write (the
 * caller fills e). The temporary file is removed on exits and signals by
 * lib/core/cleanup.h. */
struct qwrite_hooks {
	int (*tensor)(void *arg, int i, int n, const struct qwrite_info *info, struct err *e);
	void *arg;
};

/* The plan: how each tensor of st is stored under o, checked before any
 * byte is written. Returns 0 (the caller frees *plan), QWRITE_EDTYPE (a
 * tensor neither BF16 nor F32) or QWRITE_EGROUP (the int4 group size does
 * not divide a quantized matrix: "group size 64 does not divide 96 columns
 * of tensor 'x'"), with e filled. */
enum { QWRITE_EDTYPE = -1, QWRITE_EGROUP = -2 };
int qwrite_plan(const struct st_file *st, const struct qwrite_opts *o,
		struct qfile_entry **plan, struct err *e);

/* Writes the model (st planned by qwrite_plan, with the JSON texts of h,
 * whose level, group size and embeddings flag are set from o) to out,
 * atomically (lib/format/qfile.h): on failure nothing is left on disk. Returns 0
 * or -1 with e filled. */
int qwrite_model(const char *out, const struct st_file *st, const struct qfile_entry *plan,
		 struct qfile_header *h, const struct qwrite_opts *o,
		 const struct qwrite_hooks *hooks, struct err *e);

#endif
