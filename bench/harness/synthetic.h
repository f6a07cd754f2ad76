/* synthetic: a full-size model with random weights, for benchmarks.
 *
 * Decode and prefill speed depend on shapes, not values, so a model with
 * the real Qwen2.5-0.5B-Instruct shapes and random bf16 weights measures
 * what the real one would, without a 988 MB download. The shapes come from
 * a config.json (data/qwen2.5-0.5b-instruct/config.json by default), so any
 * config gives its synthetic model; nothing about Qwen is built in.
 *
 * The model is a directory like a downloaded one:
 *   config.json, generation_config.json, tokenizer.json   copies of the
 *       files beside the config (the last two when they exist there)
 *   model.safetensors   every tensor the config implies (lib/format/manifest.h),
 *       BF16, 64-byte aligned data; norm weights are 1.0, every other value
 *       is random in about +-0.03 (a fixed xorshift stream, so the file is
 *       the same on every machine)
 *   model.q8, model.q4  the containers `quantize --embeddings --level int8`
 *       and `quantize --embeddings --level int4` (group 32) write from
 *       model.safetensors: the same tensors, the same quant_matrix, the
 *       same writer (lib/format/qfile.h), so the bytes are identical
 *       (tests/bench.bats). The embedding is quantized too: tied, it is the
 *       LM head, the largest single read of a decode step, and the sizes
 *       the speed targets assume (int8 about 0.5 GB, int4 about 0.28 GB
 *       for Qwen2.5-0.5B; docs/performance.md) count it quantized.
 *
 * It lives in a cache outside the repository,
 * ${XDG_CACHE_HOME:-$HOME/.cache}/qwenpipe/synthetic-NAME-HASH/, NAME the
 * config's directory name and HASH a digest of the config's bytes and of
 * the generator's version, so another config or a changed generator gets
 * its own directory. Every file is written to a temporary name in the same
 * directory and renamed into place when complete: an interrupted run leaves
 * no partial file, and a complete file is never written again.
 */
#ifndef SYNTHETIC_H
#define SYNTHETIC_H

#include <stddef.h>
#include "core/err.h"

#define SYNTHETIC_CONFIG "data/qwen2.5-0.5b-instruct/config.json"
#define SYNTHETIC_PATH_MAX 4096

struct synthetic {
	char dir[SYNTHETIC_PATH_MAX];    /* the model directory (bf16) */
	char q8[SYNTHETIC_PATH_MAX + 16];     /* dir/model.q8 */
	char q4[SYNTHETIC_PATH_MAX + 16];     /* dir/model.q4 */
	int written;                     /* files this call wrote (0: all cached) */
};

/* Called before each file is written (for progress on stderr). */
typedef void synthetic_note_fn(void *arg, const char *path);

/* Makes sure the synthetic model of config_path and its containers exist in
 * the cache, writing what is missing; fills s with their paths. note may be
 * NULL. Returns 0, or -1 with e set (unreadable config, no cache directory,
 * a write error: the temporary file is removed). */
int synthetic_ensure(struct synthetic *s, const char *config_path,
		     synthetic_note_fn *note, void *arg, struct err *e);

/* The cache root, ${XDG_CACHE_HOME:-$HOME/.cache}/qwenpipe, created if
 * missing. Returns 0, or -1 with e set. */
int synthetic_cache_root(char *buf, size_t cap, struct err *e);

#endif
