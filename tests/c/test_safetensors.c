/* The safetensors reader on the bundled files and on small in-memory
 * images, and the manifest against the bundled configs.
 *
 * Reference figures: tensor counts and the real Qwen2.5-0.5B parameter
 * count come from the issue (the real file's figures); the header lengths,
 * shapes and offsets were read with Python's json module from the files. */
#include "check.h"
#include "format/config.h"
#include "format/manifest.h"
#include "format/safetensors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TINY "data/shakespeare-tiny/"
#define SHAPES "tests/fixtures/qwen-shapes/"
#define QWEN "data/qwen2.5-0.5b-instruct/"

static void check_tiling(const struct st_file *f)
{
	uint64_t pos = 0;
	int ok = 1;
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		ok &= t->begin == pos;
		ok &= (t->end - t->begin) * 8 == t->nelem * st_dtype_bits(t->dtype);
		ok &= (const unsigned char *)t->data ==
		      f->map.data + f->data_offset + t->begin;
		pos = t->end;
	}
	CHECK(ok, "tensors sorted by offset, tiling the data section, views in place");
	CHECK(f->data_offset + pos == f->map.size, "the last tensor ends the file");
}

/* Opens path; on failure counts it and returns -1. */
static int open_ok(struct st_file *f, const char *path)
{
	struct err e;
	int rc = st_open(f, path, &e);
	CHECK(rc == 0, "open %s: %s", path, rc ? e.msg : "");
	return rc;
}

static void test_tiny(void)
{
	struct st_file f;
	if (open_ok(&f, TINY "model.safetensors"))
		return;
	CHECK(f.ntensors == 50, "tiny has 50 tensors, got %d", f.ntensors);
	CHECK(f.header_len == 5360, "header length 5360, got %llu",
	      (unsigned long long)f.header_len);
	CHECK(f.data_offset == 5368, "data offset 5368");
	CHECK(f.nmeta == 1 && strcmp(f.meta_keys[0], "format") == 0 &&
	      strcmp(f.meta_vals[0], "pt") == 0, "__metadata__ is {format: pt}");
	const struct st_tensor *t = st_find(&f, "model.embed_tokens.weight");
	CHECK(t && t->dtype == ST_BF16 && t->ndim == 2 && t->shape[0] == 151936 &&
	      t->shape[1] == 64 && t->begin == 0 && t->end == 19447808,
	      "embed_tokens: BF16 [151936, 64] at [0, 19447808)");
	CHECK(st_find(&f, "lm_head.weight") == NULL, "tied: no lm_head");
	check_tiling(&f);
	st_close(&f);
}

static void test_shapes(void)
{
	struct st_file f;
	if (open_ok(&f, SHAPES "model.safetensors"))
		return;
	CHECK(f.ntensors == 27, "qwen-shapes has 27 tensors, got %d", f.ntensors);
	CHECK(f.header_len == 2856, "header length 2856");
	const struct st_tensor *t = st_find(&f, "lm_head.weight");
	CHECK(t && t->shape[0] == 4096 && t->shape[1] == 256 && t->begin == 0,
	      "untied lm_head [4096, 256] first in the data");
	check_tiling(&f);
	st_close(&f);
}

/* Builds "8-byte length + json + data" into buf; returns the size. */
static size_t image(unsigned char *buf, const char *json, const void *data, size_t n)
{
	size_t h = strlen(json);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
	memcpy(buf + 8, json, h);
	if (n)
		memcpy(buf + 8 + h, data, n);
	return 8 + h + n;
}

static void test_images(void)
{
	unsigned char buf[512];
	struct st_file f;
	struct err e;

	/* Values come back through the view; a scalar has one element; a
	 * zero-length tensor may share an offset with the next one. */
	float vals[3] = { 1.5f, -2.0f, 3.25f };
	size_t n = image(buf, "{\"b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[8,12]},"
			 "\"z\":{\"dtype\":\"I8\",\"shape\":[0,4],\"data_offsets\":[8,8]},"
			 "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ",
			 vals, sizeof vals);
	int rc = st_parse(&f, buf, n, "img", &e);
	CHECK(rc == 0, "small image parses: %s", rc ? e.msg : "");
	if (rc == 0) {
		const struct st_tensor *a = st_find(&f, "a"), *b = st_find(&f, "b"),
				       *z = st_find(&f, "z");
		float x[2], y;
		memcpy(x, a->data, 8);
		memcpy(&y, b->data, 4);
		CHECK(x[0] == 1.5f && x[1] == -2.0f && y == 3.25f, "values through views");
		CHECK(b->ndim == 0 && b->nelem == 1, "a scalar has one element");
		CHECK(z->nelem == 0 && z->begin == 8, "zero-length tensor");
		CHECK(f.nmeta == 0, "no metadata");
		st_close(&f);
	}

	/* An empty header and no data is a valid (empty) file. */
	n = image(buf, "{}", NULL, 0);
	rc = st_parse(&f, buf, n, "img", &e);
	CHECK(rc == 0 && f.ntensors == 0, "empty object: no tensors");
	if (rc == 0)
		st_close(&f);

	/* The error names the file and the tensor. */
	n = image(buf, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
		  vals, 4);
	rc = st_parse(&f, buf, n, "img", &e);
	CHECK(rc == -1 && strcmp(e.msg, "img: tensor 'a': data_offsets: 4 bytes, "
				 "but 2 elements of F32 need 8") == 0,
	      "length mismatch message: %s", e.msg);
}

static void test_manifest(void)
{
	struct model_config c;
	struct err e;
	struct manifest m;
	manifest_init(&m);
	int rc = config_load(&c, QWEN "config.json", &e);
	CHECK(rc == 0, "load qwen config: %s", rc ? e.msg : "");
	if (rc || manifest_build(&m, &c, &e) < 0)
		return;
	CHECK(m.n == 290, "Qwen2.5-0.5B: 290 tensors, got %d", m.n);
	CHECK(manifest_params(&m) == 494032768ull, "Qwen2.5-0.5B: 494,032,768 "
	      "params, got %llu", (unsigned long long)manifest_params(&m));
	manifest_free(&m);

	/* Each bundled file matches its own config, and not the other's. */
	const char *dirs[2] = { TINY, SHAPES };
	struct manifest want[2], have[2];
	for (int i = 0; i < 2; i++) {
		char path[128];
		struct st_file f;
		manifest_init(&want[i]);
		manifest_init(&have[i]);
		snprintf(path, sizeof path, "%sconfig.json", dirs[i]);
		CHECK(config_load(&c, path, &e) == 0 &&
		      manifest_build(&want[i], &c, &e) == 0, "%s", e.msg);
		snprintf(path, sizeof path, "%smodel.safetensors", dirs[i]);
		CHECK(st_open(&f, path, &e) == 0 && manifest_from_st(&have[i], &f, &e) == 0,
		      "%s", e.msg);
		st_close(&f);
	}
	struct mdiff *d;
	int nd;
	for (int i = 0; i < 2; i++) {
		manifest_diff(&want[i], &have[i], &d, &nd, &e);
		CHECK(nd == 0 && d == NULL, "%s matches its config (%d differences)",
		      dirs[i], nd);
	}
	/* tiny's config against qwen-shapes' file: every shape differs (no
	 * layer 2 or 3 there, and an lm_head tiny does not have). */
	manifest_diff(&want[0], &have[1], &d, &nd, &e);
	int miss = 0, unexp = 0, shape = 0;
	for (int i = 0; i < nd; i++) {
		miss += d[i].kind == MDIFF_MISSING;
		unexp += d[i].kind == MDIFF_UNEXPECTED;
		shape += d[i].kind == MDIFF_SHAPE;
	}
	CHECK(miss == 24 && unexp == 1 && shape == 26,
	      "tiny config vs shapes file: 24 missing, 1 unexpected, 26 wrong shape; "
	      "got %d, %d, %d", miss, unexp, shape);
	CHECK(nd > 0 && d[nd - 1].kind == MDIFF_UNEXPECTED &&
	      strcmp(d[nd - 1].have->name, "lm_head.weight") == 0, "lm_head unexpected");
	free(d);
	for (int i = 0; i < 2; i++) {
		manifest_free(&want[i]);
		manifest_free(&have[i]);
	}

	CHECK(mrole_of("model.layers.3.self_attn.k_proj.bias") == MROLE_ATTN &&
	      mrole_of("model.layers.3.post_attention_layernorm.weight") == MROLE_NORM &&
	      mrole_of("model.layers.3.mlp.up_proj.weight") == MROLE_MLP &&
	      mrole_of("lm_head.weight") == MROLE_EMBED &&
	      mrole_of("model.norm.weight") == MROLE_NORM &&
	      mrole_of("rotary.inv_freq") == MROLE_OTHER, "roles by name");
}

int main(void)
{
	test_tiny();
	test_shapes();
	test_images();
	test_manifest();
	return check_done("test_safetensors");
}
