/* qmodel: quantizing a loaded model in memory.
 *
 * ppl sweeps quantization levels without writing containers, and the
 * simulated-quantization test compares a stored container with the same
 * quantization done here: both go through the same row functions as
 * `quantize` (lib/kernels/quant.h), so a level computed in memory is bit for bit
 * the container's.
 */
#ifndef QMODEL_H
#define QMODEL_H

#include <stdbool.h>
#include "core/err.h"
#include "model/model.h"

struct qscheme {
	enum wtype type;   /* WT_Q8 or WT_Q4 */
	int group_size;    /* WT_Q4 */
	bool embeddings;   /* also the embedding matrix (the LM head when tied) */
	bool rtn;          /* WT_Q4: the round-to-nearest baseline, not the search */
};


/* Replaces every matrix of m that the scheme quantizes (qfile_quantizes)
 * with its quantized version, in one buffer m owns (model_free releases
 * it); m->weight_bytes is updated. m must come from a safetensors model (its
 * matrices WT_F32 or WT_BF16). Returns 0, or -1 with e filled (a group size
 * that does not divide a matrix, memory). */
int model_quantize(struct model *m, const struct qscheme *s, struct err *e);

/* The scheme's name as ppl prints it: "int8", "int4", "int4-rtn", with
 * "+embed" when the embeddings are quantized. */
const char *qscheme_name(const struct qscheme *s, char *buf, size_t cap);

#endif
