/* safetensors: see safetensors.h.
 *
 * The order of the checks is the order of trust: the 8-byte length against
 * the file, the header text as JSON, each entry on its own (keys, dtype,
 * shape, offsets, byte length), then the entries together (names unique,
 * data section exactly covered: no overlap, no hole, nothing after the last
 * tensor). Only then are views handed out.
 */
#include "format/safetensors.h"
#include "core/jsonutil.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	unsigned bits;
} dtypes[ST_NDTYPES] = {
	[ST_F64] = { "F64", 64 },  [ST_F32] = { "F32", 32 },
	[ST_F16] = { "F16", 16 },  [ST_BF16] = { "BF16", 16 },
	[ST_I64] = { "I64", 64 },  [ST_I32] = { "I32", 32 },
	[ST_I16] = { "I16", 16 },  [ST_I8] = { "I8", 8 },
	[ST_U8] = { "U8", 8 },     [ST_BOOL] = { "BOOL", 8 },
	[ST_U64] = { "U64", 64 },  [ST_U32] = { "U32", 32 },
	[ST_U16] = { "U16", 16 },  [ST_F8_E4M3] = { "F8_E4M3", 8 },
	[ST_F8_E5M2] = { "F8_E5M2", 8 }, [ST_F8_E8M0] = { "F8_E8M0", 8 },
	[ST_F6_E2M3] = { "F6_E2M3", 6 }, [ST_F6_E3M2] = { "F6_E3M2", 6 },
	[ST_F4] = { "F4", 4 },     [ST_C64] = { "C64", 64 },
};

const char *st_dtype_name(enum st_dtype t)
{
	return (unsigned)t < ST_NDTYPES ? dtypes[t].name : "?";
}

unsigned st_dtype_bits(enum st_dtype t)
{
	return (unsigned)t < ST_NDTYPES ? dtypes[t].bits : 0;
}

size_t st_dtype_size(enum st_dtype t)
{
	return (st_dtype_bits(t) + 7) / 8;
}

int st_dtype_parse(const char *s, enum st_dtype *t)
{
	for (int i = 0; i < ST_NDTYPES; i++)
		if (strcmp(s, dtypes[i].name) == 0) {
			*t = (enum st_dtype)i;
			return 0;
		}
	return -1;
}

/* Cleans up a half-built file: every pointer is NULL or owned. */
static void free_parts(struct st_file *f)
{
	for (int i = 0; i < f->ntensors; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	for (int i = 0; i < f->nmeta; i++) {
		free(f->meta_keys[i]);
		free(f->meta_vals[i]);
	}
	free(f->meta_keys);
	free(f->meta_vals);
	f->tensors = NULL;
	f->meta_keys = f->meta_vals = NULL;
	f->ntensors = f->nmeta = 0;
}

/* A non-negative integer written as one ("24", not "24.0": the reference
 * reader wants an integer there), read exactly from its literal; one past
 * INT64_MAX is refused (no file is that large). */
static int get_u63(const cJSON *v, uint64_t *out)
{
	int64_t i;
	if (json_integer(v, &i) < 0 || i < 0 || i == INT64_MAX)
		return -1;
	*out = (uint64_t)i;
	return 0;
}

static int parse_meta(struct st_file *f, const cJSON *meta, struct err *e)
{
	if (!cJSON_IsObject(meta))
		return err_set(e, "__metadata__: not an object");
	int n = cJSON_GetArraySize(meta);
	f->meta_keys = calloc((size_t)n + 1, sizeof *f->meta_keys);
	f->meta_vals = calloc((size_t)n + 1, sizeof *f->meta_vals);
	if (!f->meta_keys || !f->meta_vals)
		return err_set(e, "out of memory");
	for (const cJSON *m = meta->child; m; m = m->next) {
		char key[128];
		json_quote(key, sizeof key, m->string);
		if (!cJSON_IsString(m))
			return err_set(e, "__metadata__: %s: not a string", key);
		f->meta_keys[f->nmeta] = strdup(m->string);
		f->meta_vals[f->nmeta] = strdup(m->valuestring);
		f->nmeta++;
		if (!f->meta_keys[f->nmeta - 1] || !f->meta_vals[f->nmeta - 1])
			return err_set(e, "out of memory");
	}
	return 0;
}

/* Fills t from one header entry, checked on its own: keys, dtype, shape,
 * offsets in order and inside a data section of data_size bytes, byte
 * length. Messages start with the quoted tensor name. */
static int parse_tensor(struct st_tensor *t, const cJSON *v, uint64_t data_size,
			struct err *e)
{
	char qn[160];
	json_quote(qn, sizeof qn, v->string);
	if (!utf8_valid(v->string))
		return err_set(e, "tensor %s: name is not valid UTF-8", qn);
	if (!cJSON_IsObject(v))
		return err_set(e, "tensor %s: not an object", qn);

	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(v, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(v, "shape");
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(v, "data_offsets");
	if (!dt)
		return err_set(e, "tensor %s: dtype: missing", qn);
	if (!sh)
		return err_set(e, "tensor %s: shape: missing", qn);
	if (!off)
		return err_set(e, "tensor %s: data_offsets: missing", qn);

	if (!cJSON_IsString(dt))
		return err_set(e, "tensor %s: dtype: not a string", qn);
	if (st_dtype_parse(dt->valuestring, &t->dtype) < 0) {
		char qd[64];
		json_quote(qd, sizeof qd, dt->valuestring);
		return err_set(e, "tensor %s: dtype: unknown %s", qn, qd);
	}

	if (!cJSON_IsArray(sh))
		return err_set(e, "tensor %s: shape: not an array", qn);
	int nd = cJSON_GetArraySize(sh);
	if (nd > ST_MAX_DIMS)
		return err_set(e, "tensor %s: shape: %d dimensions (at most %d)",
			       qn, nd, ST_MAX_DIMS);
	t->ndim = 0;
	t->nelem = 1;
	for (const cJSON *d = sh->child; d; d = d->next) {
		uint64_t dim;
		if (get_u63(d, &dim) < 0) {
			char buf[64];
			json_print_scalar(buf, sizeof buf, d);
			return err_set(e, "tensor %s: shape: dimension %s is not a "
				       "non-negative integer", qn, buf);
		}
		t->shape[t->ndim++] = (int64_t)dim;
		if (__builtin_mul_overflow(t->nelem, dim, &t->nelem))
			return err_set(e, "tensor %s: shape: element count overflows "
				       "64 bits", qn);
	}
	uint64_t nbits, nbytes;
	if (__builtin_mul_overflow(t->nelem, (uint64_t)st_dtype_bits(t->dtype), &nbits))
		return err_set(e, "tensor %s: shape: byte count overflows 64 bits", qn);
	if (nbits % 8)
		return err_set(e, "tensor %s: shape: %llu elements of %s do not fill whole "
			       "bytes", qn, (unsigned long long)t->nelem, st_dtype_name(t->dtype));
	nbytes = nbits / 8;

	if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
	    get_u63(off->child, &t->begin) < 0 ||
	    get_u63(off->child->next, &t->end) < 0)
		return err_set(e, "tensor %s: data_offsets: not a pair of "
			       "non-negative integers", qn);
	if (t->begin > t->end)
		return err_set(e, "tensor %s: data_offsets: [%llu, %llu] are reversed",
			       qn, (unsigned long long)t->begin,
			       (unsigned long long)t->end);
	if (t->end > data_size)
		return err_set(e, "tensor %s: data_offsets: end %llu is past the end "
			       "of the data section (%llu bytes)", qn,
			       (unsigned long long)t->end,
			       (unsigned long long)data_size);
	if (t->end - t->begin != nbytes)
		return err_set(e, "tensor %s: data_offsets: %llu bytes, but %llu "
			       "elements of %s need %llu", qn,
			       (unsigned long long)(t->end - t->begin),
			       (unsigned long long)t->nelem, st_dtype_name(t->dtype),
			       (unsigned long long)nbytes);
	t->name = strdup(v->string);
	if (!t->name)
		return err_set(e, "out of memory");
	return 0;
}

static int by_offset(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* The tensors, sorted by offset, must tile [0, data_size) exactly. */
static int check_tiling(const struct st_file *f, uint64_t data_size, struct err *e)
{
	uint64_t pos = 0;
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		char qn[160], qp[160];
		json_quote(qn, sizeof qn, t->name);
		if (t->begin < pos) {
			json_quote(qp, sizeof qp, f->tensors[i - 1].name);
			return err_set(e, "tensor %s: data_offsets: [%llu, %llu] "
				       "overlap tensor %s", qn,
				       (unsigned long long)t->begin,
				       (unsigned long long)t->end, qp);
		}
		if (t->begin > pos)
			return err_set(e, "tensor %s: data_offsets: %llu unused bytes "
				       "before it, at data offset %llu", qn,
				       (unsigned long long)(t->begin - pos),
				       (unsigned long long)pos);
		pos = t->end;
	}
	if (pos != data_size)
		return err_set(e, "%llu unused bytes after the last tensor",
			       (unsigned long long)(data_size - pos));
	return 0;
}

static int parse_header(struct st_file *f, const unsigned char *buf, size_t size,
			struct err *e)
{
	if (size == 0)
		return err_set(e, "empty file");
	if (size < 8)
		return err_set(e, "%zu bytes: too short for the 8-byte header length",
			       size);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | buf[i];
	/* A length that cannot be right, with no '{' after it, is not a cut or
	 * damaged safetensors file but another kind of file (a text file's
	 * first 8 bytes make a huge "length"): that is said first. */
	if ((n > ST_MAX_HEADER || n > size - 8) && size > 8 && buf[8] != '{')
		return err_set(e, "not a safetensors file (no JSON header after the "
			       "8-byte length)");
	if (n > ST_MAX_HEADER)
		return err_set(e, "header length %llu is larger than the format's limit "
			       "(%d bytes)", (unsigned long long)n, ST_MAX_HEADER);
	if (n > size - 8)
		return err_set(e, "header length %llu is larger than the %zu bytes "
			       "after it (a truncated file?)", (unsigned long long)n, size - 8);
	f->header_len = n;
	f->data_offset = 8 + n;
	uint64_t data_size = size - f->data_offset;

	/* Exactly the header's bytes; a NUL inside them is reported, not
	 * silently cut. */
	cJSON *root = NULL;
	if (json_parse_text(&root, (const char *)buf + 8, (size_t)n, "header", e) < 0)
		return -1;

	int rc = -1;
	if (!cJSON_IsObject(root)) {
		err_set(e, "header: not a JSON object");
		goto out;
	}
	int n_items = cJSON_GetArraySize(root);
	f->tensors = calloc((size_t)n_items + 1, sizeof *f->tensors);
	if (!f->tensors) {
		err_set(e, "out of memory");
		goto out;
	}
	for (const cJSON *v = root->child; v; v = v->next) {
		if (strcmp(v->string, "__metadata__") == 0) {
			if (parse_meta(f, v, e) < 0)
				goto out;
			continue;
		}
		if (parse_tensor(&f->tensors[f->ntensors], v, data_size, e) < 0)
			goto out;
		f->ntensors++;
	}
	qsort(f->tensors, (size_t)f->ntensors, sizeof *f->tensors, by_offset);
	if (check_tiling(f, data_size, e) < 0)
		goto out;
	for (int i = 0; i < f->ntensors; i++)
		f->tensors[i].data = buf + f->data_offset + f->tensors[i].begin;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int st_parse(struct st_file *f, const unsigned char *buf, size_t size,
	     const char *name, struct err *e)
{
	memset(f, 0, sizeof *f);
	if (parse_header(f, buf, size, e) < 0) {
		free_parts(f);
		return err_prefix(e, name);
	}
	return 0;
}

int st_open(struct st_file *f, const char *path, struct err *e)
{
	struct mapfile m;
	if (mapfile_open(&m, path, e) < 0)
		return -1;
	if (st_parse(f, m.data, m.size, path, e) < 0) {
		mapfile_close(&m);
		return -1;
	}
	f->map = m;
	return 0;
}

void st_close(struct st_file *f)
{
	free_parts(f);
	mapfile_close(&f->map);
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (int i = 0; i < f->ntensors; i++)
		if (strcmp(f->tensors[i].name, name) == 0)
			return &f->tensors[i];
	return NULL;
}
