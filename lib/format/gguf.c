/* gguf: see gguf.h.
 *
 * The order of the checks is the order of trust: the fixed header, each
 * key/value pair in turn (every length against the bytes left before
 * anything is allocated for it), general.alignment, each tensor info on its
 * own, then the tensors together against the data section. Only then are
 * views handed out.
 */
#include "format/gguf.h"
#include "core/jsonutil.h"

#include "core/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const vtype_names[GGUF_NVTYPES] = {
	"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
	"BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
};

/* Bytes of a scalar of each type (0: STRING, ARRAY). */
static const uint8_t vtype_size[GGUF_NVTYPES] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

static const struct {
	const char *name;
	uint32_t block, size;   /* 0, 0: named, not read */
} ttypes[GGML_NTYPES] = {
	[GGML_F32] = { "F32", 1, 4 },       [GGML_F16] = { "F16", 1, 2 },
	[GGML_Q4_0] = { "Q4_0", 32, 18 },   [GGML_Q4_1] = { "Q4_1", 32, 20 },
	[GGML_Q5_0] = { "Q5_0", 32, 22 },   [GGML_Q5_1] = { "Q5_1", 32, 24 },
	[GGML_Q8_0] = { "Q8_0", 32, 34 },   [GGML_Q8_1] = { "Q8_1", 32, 36 },
	[GGML_Q2_K] = { "Q2_K", 256, 84 },  [GGML_Q3_K] = { "Q3_K", 256, 110 },
	[GGML_Q4_K] = { "Q4_K", 256, 144 }, [GGML_Q5_K] = { "Q5_K", 256, 176 },
	[GGML_Q6_K] = { "Q6_K", 256, 210 }, [GGML_Q8_K] = { "Q8_K", 256, 292 },
	[16] = { "IQ2_XXS", 0, 0 }, [17] = { "IQ2_XS", 0, 0 },
	[18] = { "IQ3_XXS", 0, 0 }, [19] = { "IQ1_S", 0, 0 },
	[GGML_IQ4_NL] = { "IQ4_NL", 32, 18 },  [21] = { "IQ3_S", 0, 0 },
	[22] = { "IQ2_S", 0, 0 },   [GGML_IQ4_XS] = { "IQ4_XS", 256, 136 },
	[GGML_I8] = { "I8", 1, 1 },   [GGML_I16] = { "I16", 1, 2 },
	[GGML_I32] = { "I32", 1, 4 }, [GGML_I64] = { "I64", 1, 8 },
	[GGML_F64] = { "F64", 1, 8 }, [29] = { "IQ1_M", 0, 0 },
	[GGML_BF16] = { "BF16", 1, 2 },
	[34] = { "TQ1_0", 0, 0 }, [35] = { "TQ2_0", 0, 0 },
	[39] = { "MXFP4", 0, 0 },
};

const char *gguf_vtype_name(enum gguf_vtype t)
{
	return (unsigned)t < GGUF_NVTYPES ? vtype_names[t] : "?";
}

const char *gguf_ttype_name(enum gguf_ttype t)
{
	return (unsigned)t < GGML_NTYPES ? ttypes[t].name : NULL;
}

uint64_t gguf_ttype_block(enum gguf_ttype t)
{
	return (unsigned)t < GGML_NTYPES ? ttypes[t].block : 0;
}

uint64_t gguf_ttype_size(enum gguf_ttype t)
{
	return (unsigned)t < GGML_NTYPES ? ttypes[t].size : 0;
}

/* ---- a cursor over the header ---- */

struct rd {
	const unsigned char *p, *end;
	const char *name;   /* the file, for messages */
	char what[192];     /* what is being read: "key 'x'", "tensor 'y'", ... */
	struct err *e;
};

static int fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct rd *r, const char *fmt, ...)
{
	char msg[320];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(r->e, "%s: %s%s%s", r->name, r->what, r->what[0] ? ": " : "", msg);
}

static uint64_t left(const struct rd *r)
{
	return (uint64_t)(r->end - r->p);
}

static int take(struct rd *r, uint64_t n, const unsigned char **out)
{
	if (n > left(r)) {
		fail(r, "truncated (needs %" PRIu64 " bytes, %" PRIu64 " left)", n, left(r));
		return -1;  /* (fail does too; said here for the compiler's flow analysis) */
	}
	*out = r->p;
	r->p += n;
	return 0;
}

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int u32(struct rd *r, uint32_t *v)
{
	const unsigned char *p;
	if (take(r, 4, &p) < 0)
		return -1;
	*v = (uint32_t)le(p, 4);
	return 0;
}

static int u64(struct rd *r, uint64_t *v)
{
	const unsigned char *p;
	if (take(r, 8, &p) < 0)
		return -1;
	*v = le(p, 8);
	return 0;
}

/* A string: u64 length, then that many bytes. */
static int str(struct rd *r, const char **s, uint64_t *len)
{
	const unsigned char *p;
	if (u64(r, len) < 0 || take(r, *len, &p) < 0)
		return -1;
	*s = (const char *)p;
	return 0;
}

/* A NUL-terminated, valid UTF-8 copy of s[0..n) (NULL when it is not valid
 * or has a NUL inside; *oom says which). */
static char *name_copy(const char *s, uint64_t n, int *oom)
{
	*oom = 0;
	if (memchr(s, 0, n))
		return NULL;
	char *c = malloc(n + 1);
	if (!c) {
		*oom = 1;
		return NULL;
	}
	memcpy(c, s, n);
	c[n] = 0;
	if (!utf8_valid(c)) {
		free(c);
		return NULL;
	}
	return c;
}

/* A name for messages: JSON-quoted (control characters escaped), cut. */
static void quoted(char *buf, size_t cap, const char *s, uint64_t n)
{
	char tmp[96];
	size_t k = n < sizeof tmp - 1 ? (size_t)n : sizeof tmp - 1;
	memcpy(tmp, s, k);
	tmp[k] = 0;
	for (size_t i = 0; i < k; i++)
		if (!tmp[i])
			tmp[i] = '?';
	json_quote(buf, cap, tmp);
}

/* ---- metadata ---- */

static int scalar(struct rd *r, enum gguf_vtype t, struct gguf_kv *kv)
{
	const unsigned char *p;
	if (take(r, vtype_size[t], &p) < 0)
		return -1;
	uint64_t raw = le(p, vtype_size[t]);
	switch (t) {
	case GGUF_U8: case GGUF_U16: case GGUF_U32: case GGUF_U64:
		kv->u = raw;
		kv->i = raw > INT64_MAX ? INT64_MAX : (int64_t)raw;
		break;
	case GGUF_I8: kv->i = (int8_t)raw; break;
	case GGUF_I16: kv->i = (int16_t)raw; break;
	case GGUF_I32: kv->i = (int32_t)raw; break;
	case GGUF_I64: kv->i = (int64_t)raw; break;
	case GGUF_BOOL:
		if (raw > 1)
			return fail(r, "bool is %" PRIu64 ", not 0 or 1", raw);
		kv->u = raw;
		kv->i = (int64_t)raw;
		break;
	case GGUF_F32: {
		uint32_t b = (uint32_t)raw;
		float x;
		memcpy(&x, &b, 4);
		kv->f = x;
		break;
	}
	case GGUF_F64: memcpy(&kv->f, &raw, 8); break;
	default: break;
	}
	return 0;
}

static int array(struct rd *r, struct gguf_kv *kv)
{
	uint32_t at;
	if (u32(r, &at) < 0 || u64(r, &kv->n) < 0)
		return -1;
	if (at >= GGUF_NVTYPES)
		return fail(r, "array element type %" PRIu32 " is unknown", at);
	if (at == GGUF_ARRAY)
		return fail(r, "arrays of arrays are not supported");
	kv->atype = (enum gguf_vtype)at;
	kv->arr = r->p;
	if (at != GGUF_STRING) {
		const unsigned char *p;
		uint64_t sz = vtype_size[at];
		if (kv->n > left(r) / sz)
			return fail(r, "array of %" PRIu64 " %s is truncated (%" PRIu64
				    " bytes left)", kv->n, vtype_names[at], left(r));
		if (take(r, kv->n * sz, &p) < 0)
			return -1;
		if (at == GGUF_BOOL)
			for (uint64_t i = 0; i < kv->n; i++)
				if (p[i] > 1)
					return fail(r, "element %" PRIu64 ": bool is %d, not 0 "
						    "or 1", i, p[i]);
		return 0;
	}
	/* each string takes at least its 8-byte length */
	if (kv->n > left(r) / 8)
		return fail(r, "array of %" PRIu64 " strings is truncated (%" PRIu64
			    " bytes left)", kv->n, left(r));
	for (uint64_t i = 0; i < kv->n; i++) {
		const char *s;
		uint64_t len;
		if (str(r, &s, &len) < 0)
			return fail(r, "string %" PRIu64 " of %" PRIu64 " is truncated", i,
				    kv->n);
	}
	return 0;
}

static int parse_kv(struct rd *r, struct gguf_kv *kv, int index)
{
	const char *k;
	uint64_t klen;
	snprintf(r->what, sizeof r->what, "key %d", index);
	if (str(r, &k, &klen) < 0)
		return -1;
	if (klen == 0)
		return fail(r, "empty key");
	int oom;
	kv->key = name_copy(k, klen, &oom);
	if (!kv->key)
		return oom ? fail(r, "out of memory") : fail(r, "key is not valid UTF-8");
	char q[128];
	quoted(q, sizeof q, k, klen);
	snprintf(r->what, sizeof r->what, "key %s", q);
	uint32_t t;
	if (u32(r, &t) < 0)
		return -1;
	if (t >= GGUF_NVTYPES)
		return fail(r, "value type %" PRIu32 " is unknown", t);
	kv->type = (enum gguf_vtype)t;
	if (t == GGUF_STRING)
		return str(r, &kv->s, &kv->slen);
	if (t == GGUF_ARRAY)
		return array(r, kv);
	return scalar(r, kv->type, kv);
}

/* ---- tensors ---- */

static int parse_tensor(struct rd *r, struct gguf_tensor *t, int index, uint64_t align)
{
	const char *s;
	uint64_t len;
	snprintf(r->what, sizeof r->what, "tensor %d", index);
	if (str(r, &s, &len) < 0)
		return -1;
	if (len == 0)
		return fail(r, "empty name");
	char q[128];
	quoted(q, sizeof q, s, len);
	if (len >= GGUF_MAX_NAME)
		return fail(r, "name %s is %" PRIu64 " bytes (at most %d)", q, len,
			    GGUF_MAX_NAME - 1);
	int oom;
	t->name = name_copy(s, len, &oom);
	if (!t->name)
		return oom ? fail(r, "out of memory") : fail(r, "name is not valid UTF-8");
	snprintf(r->what, sizeof r->what, "tensor %s", q);
	uint32_t nd, type;
	if (u32(r, &nd) < 0)
		return -1;
	if (nd < 1 || nd > GGUF_MAX_DIMS)
		return fail(r, "%" PRIu32 " dimensions (1 to %d)", nd, GGUF_MAX_DIMS);
	t->ndim = (int)nd;
	t->nelem = 1;
	for (int d = 0; d < GGUF_MAX_DIMS; d++) {
		uint64_t v = 1;
		if (d < t->ndim && u64(r, &v) < 0)
			return -1;
		if (v == 0 || v > INT64_MAX)
			return fail(r, "ne[%d] is %" PRIu64 " (must be 1 to 2^63-1)", d, v);
		if (t->nelem > (uint64_t)INT64_MAX / v)
			return fail(r, "element count overflows 63 bits");
		t->ne[d] = (int64_t)v;
		t->nelem *= v;
	}
	if (u32(r, &type) < 0 || u64(r, &t->offset) < 0)
		return -1;
	const char *tn = gguf_ttype_name((enum gguf_ttype)type);
	if (!tn)
		return fail(r, "type %" PRIu32 " is unknown", type);
	t->type = (enum gguf_ttype)type;
	uint64_t blk = ttypes[type].block;
	if (!blk)
		return fail(r, "type %s is not supported", tn);
	if ((uint64_t)t->ne[0] % blk)
		return fail(r, "ne[0] = %" PRId64 " is not a multiple of %s's block of %"
			    PRIu64, t->ne[0], tn, blk);
	t->bytes = t->nelem / blk * ttypes[type].size;  /* < 2^63 / 32 * 292 */
	if (t->offset % align)
		return fail(r, "offset %" PRIu64 " is not a multiple of the alignment %"
			    PRIu64, t->offset, align);
	return 0;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return x % a ? x + (a - x % a) : x;
}

static int by_offset(const void *a, const void *b)
{
	const struct gguf_tensor *x = *(const struct gguf_tensor *const *)a;
	const struct gguf_tensor *y = *(const struct gguf_tensor *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The tensors against the data section: contiguous in offset order (each
 * at the previous end rounded up to the alignment), inside the file, the
 * file ending at the last end or its padding. */
static int check_layout(struct gguf_file *f, struct rd *r)
{
	uint64_t data_size = f->size - f->data_offset;  /* data_offset <= size checked */
	struct gguf_tensor **o = malloc(sizeof *o * ((size_t)f->ntensors + 1));
	if (!o)
		return fail(r, "out of memory");
	for (int i = 0; i < f->ntensors; i++)
		o[i] = &f->t[i];
	qsort(o, (size_t)f->ntensors, sizeof *o, by_offset);
	uint64_t end = 0;
	int rc = 0;
	for (int i = 0; i < f->ntensors && !rc; i++) {
		struct gguf_tensor *t = o[i];
		char q[128], qp[128];
		json_quote(q, sizeof q, t->name);
		snprintf(r->what, sizeof r->what, "tensor %s", q);
		uint64_t want = align_up(end, f->alignment);
		if (t->offset < end)
			rc = fail(r, "offset %" PRIu64 " overlaps tensor %s (which ends at %"
				  PRIu64 ")", t->offset, json_quote(qp, sizeof qp, o[i - 1]->name),
				  end);
		else if (t->offset != want)
			rc = fail(r, "offset %" PRIu64 " leaves a hole after %s (expected %"
				  PRIu64 ")", t->offset, i ? json_quote(qp, sizeof qp,
				  o[i - 1]->name) : "the start of the data section", want);
		else if (t->bytes > data_size || t->offset > data_size - t->bytes)
			rc = fail(r, "its %" PRIu64 " bytes at offset %" PRIu64 " run past the "
				  "end of the data section (%" PRIu64 " bytes)", t->bytes,
				  t->offset, data_size);
		else
			end = t->offset + t->bytes;
	}
	free(o);
	if (rc)
		return rc;
	r->what[0] = 0;
	if (data_size != end && data_size != align_up(end, f->alignment))
		return fail(r, "%" PRIu64 " bytes after the last tensor (the data section "
			    "ends at %" PRIu64 ")", data_size - end, f->data_offset + end);
	for (int i = 0; i < f->ntensors; i++)
		f->t[i].data = f->base + f->data_offset + f->t[i].offset;
	return 0;
}

static void free_parts(struct gguf_file *f)
{
	for (int i = 0; i < f->nkv; i++)
		free(f->kv[i].key);
	free(f->kv);
	for (int i = 0; i < f->ntensors; i++)
		free(f->t[i].name);
	free(f->t);
	f->kv = NULL;
	f->t = NULL;
	f->nkv = f->ntensors = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first name given twice among n names (NULL when all differ). */
static const char *duplicate(char **names, int n, int *oom)
{
	*oom = 0;
	char **s = malloc(sizeof *s * ((size_t)n + 1));
	if (!s) {
		*oom = 1;
		return NULL;
	}
	memcpy(s, names, sizeof *s * (size_t)n);
	qsort(s, (size_t)n, sizeof *s, cmp_str);
	const char *d = NULL;
	for (int i = 1; i < n && !d; i++)
		if (strcmp(s[i - 1], s[i]) == 0)
			d = s[i];
	free(s);
	return d;
}

static int parse_alignment(struct gguf_file *f, struct rd *r)
{
	f->alignment = GGUF_DEFAULT_ALIGNMENT;
	const struct gguf_kv *a = gguf_find_kv(f, "general.alignment");
	if (!a)
		return 0;
	snprintf(r->what, sizeof r->what, "key 'general.alignment'");
	if (a->type != GGUF_U32)
		return fail(r, "type %s, expected UINT32", vtype_names[a->type]);
	if (a->u == 0 || (a->u & (a->u - 1)))
		return fail(r, "%" PRIu64 " is not a power of two", a->u);
	f->alignment = a->u;
	return 0;
}

/* Smallest bytes of one key/value pair (key length, one byte of key, type,
 * a one-byte value) and of one tensor info (name length, one byte, n_dims,
 * type, offset): the counts are checked against them before
 * anything is allocated. */
#define MIN_KV 14
#define MIN_TENSOR 25

static int parse_all(struct gguf_file *f, struct rd *r)
{
	const unsigned char *p;
	uint64_t nt, nkv;
	if (r->end - r->p < 4 || memcmp(r->p, GGUF_MAGIC, 4) != 0)
		return fail(r, "not a GGUF file (no \"GGUF\" magic)");
	r->p += 4;
	if (u32(r, &f->version) < 0)
		return -1;
	if (f->version == 1)
		return fail(r, "GGUF version 1 is not supported (2 or 3)");
	if (f->version != 2 && f->version != 3)
		return fail(r, "GGUF version %" PRIu32 " is not supported (2 or 3%s)",
			    f->version, (f->version & 0xffff) == 0 ? "; a big-endian file?" : "");
	if (u64(r, &nt) < 0 || u64(r, &nkv) < 0)
		return -1;
	if (nkv > left(r) / MIN_KV)
		return fail(r, "%" PRIu64 " key/value pairs cannot fit in %" PRIu64
			    " bytes", nkv, left(r));
	if (nt > left(r) / MIN_TENSOR || nt > INT32_MAX)
		return fail(r, "%" PRIu64 " tensors cannot fit in %" PRIu64 " bytes", nt,
			    left(r));
	f->kv = calloc((size_t)nkv + 1, sizeof *f->kv);
	f->t = calloc((size_t)nt + 1, sizeof *f->t);
	if (!f->kv || !f->t)
		return fail(r, "out of memory");
	for (uint64_t i = 0; i < nkv; i++) {
		f->nkv++;
		if (parse_kv(r, &f->kv[i], (int)i) < 0)
			return -1;
	}
	r->what[0] = 0;
	int oom;
	char **names = malloc(sizeof *names * ((size_t)(nkv > nt ? nkv : nt) + 1));
	if (!names)
		return fail(r, "out of memory");
	for (int i = 0; i < f->nkv; i++)
		names[i] = f->kv[i].key;
	const char *d = duplicate(names, f->nkv, &oom);
	if (d || oom) {
		free(names);
		if (oom)
			return fail(r, "out of memory");
		char q[128];
		json_quote(q, sizeof q, d);
		snprintf(r->what, sizeof r->what, "key %s", q);
		return fail(r, "given twice");
	}
	if (parse_alignment(f, r) < 0) {
		free(names);
		return -1;
	}
	for (uint64_t i = 0; i < nt; i++) {
		f->ntensors++;
		if (parse_tensor(r, &f->t[i], (int)i, f->alignment) < 0) {
			free(names);
			return -1;
		}
	}
	for (int i = 0; i < f->ntensors; i++)
		names[i] = f->t[i].name;
	d = duplicate(names, f->ntensors, &oom);
	if (d || oom) {
		free(names);
		r->what[0] = 0;
		if (oom)
			return fail(r, "out of memory");
		char q[128];
		json_quote(q, sizeof q, d);
		snprintf(r->what, sizeof r->what, "tensor %s", q);
		return fail(r, "given twice");
	}
	free(names);
	r->what[0] = 0;
	uint64_t info_end = (uint64_t)(r->p - f->base);
	f->data_offset = align_up(info_end, f->alignment);
	if (f->ntensors == 0) {
		/* nothing but (optionally) the padding */
		if (f->size != info_end && f->size != f->data_offset)
			return fail(r, "%" PRIu64 " bytes after the header of a file without "
				    "tensors", (uint64_t)f->size - info_end);
		f->data_offset = f->size;
		return 0;
	}
	if (f->data_offset > f->size)
		return fail(r, "truncated: the data section would start at %" PRIu64
			    ", past the end (%zu bytes)", f->data_offset, f->size);
	if (take(r, f->data_offset - info_end, &p) < 0)
		return -1;
	return check_layout(f, r);
}

int gguf_parse(struct gguf_file *f, const unsigned char *buf, size_t size,
	       const char *name, struct err *e)
{
	memset(f, 0, sizeof *f);
	f->base = buf;
	f->size = size;
	struct rd r = { .p = buf, .end = buf + size, .name = name, .e = e };
	if (!buf) {
		static const unsigned char none[1];
		r.p = r.end = none;
	}
	if (parse_all(f, &r) < 0) {
		free_parts(f);
		return -1;
	}
	return 0;
}

int gguf_open(struct gguf_file *f, const char *path, struct err *e)
{
	struct mapfile m;
	if (mapfile_open(&m, path, e) < 0) {
		memset(f, 0, sizeof *f);
		return -1;
	}
	if (gguf_parse(f, m.data, m.size, path, e) < 0) {
		mapfile_close(&m);
		return -1;
	}
	f->map = m;
	return 0;
}

void gguf_close(struct gguf_file *f)
{
	free_parts(f);
	mapfile_close(&f->map);
	memset(f, 0, sizeof *f);
}

bool gguf_sniff(const char *path)
{
	size_t n = strlen(path);
	if (n >= 5 && strcmp(path + n - 5, ".gguf") == 0)
		return true;
	struct err e;
	int fd = file_open_regular(path, NULL, &e);
	if (fd < 0)
		return false;
	char b[4];
	bool yes = read(fd, b, 4) == 4 && memcmp(b, GGUF_MAGIC, 4) == 0;
	close(fd);
	return yes;
}

const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key)
{
	for (int i = 0; i < f->nkv; i++)
		if (strcmp(f->kv[i].key, key) == 0)
			return &f->kv[i];
	return NULL;
}

const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name)
{
	for (int i = 0; i < f->ntensors; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

const char *gguf_arr_str(const unsigned char **pos, uint64_t *len)
{
	*len = le(*pos, 8);
	const char *s = (const char *)*pos + 8;
	*pos += 8 + *len;
	return s;
}

int64_t gguf_arr_int(const struct gguf_kv *kv, uint64_t i)
{
	int sz = vtype_size[kv->atype];
	uint64_t raw = le(kv->arr + i * (uint64_t)sz, sz);
	switch (kv->atype) {
	case GGUF_I8: return (int8_t)raw;
	case GGUF_I16: return (int16_t)raw;
	case GGUF_I32: return (int32_t)raw;
	case GGUF_I64: return (int64_t)raw;
	default: return raw > INT64_MAX ? INT64_MAX : (int64_t)raw;
	}
}

double gguf_arr_float(const struct gguf_kv *kv, uint64_t i)
{
	if (kv->atype == GGUF_F32) {
		uint32_t b = (uint32_t)le(kv->arr + i * 4, 4);
		float x;
		memcpy(&x, &b, 4);
		return x;
	}
	if (kv->atype == GGUF_F64) {
		uint64_t b = le(kv->arr + i * 8, 8);
		double x;
		memcpy(&x, &b, 8);
		return x;
	}
	return (double)gguf_arr_int(kv, i);
}

static bool is_int(enum gguf_vtype t)
{
	return t <= GGUF_I32 || t == GGUF_U64 || t == GGUF_I64;
}

static bool is_unsigned(enum gguf_vtype t)
{
	return t == GGUF_U8 || t == GGUF_U16 || t == GGUF_U32 || t == GGUF_U64;
}

int gguf_get_int(const struct gguf_file *f, const char *key, int64_t lo, int64_t hi,
		 int64_t *out, const char *name, struct err *e)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return 1;
	if (!is_int(kv->type))
		return err_set(e, "%s: key '%s': type %s, expected an integer", name, key,
			       vtype_names[kv->type]);
	bool big = is_unsigned(kv->type) && kv->u > (uint64_t)INT64_MAX;
	if (big || kv->i < lo || kv->i > hi)
		return err_set(e, "%s: key '%s': %s%" PRId64 " is out of range [%" PRId64
			       ", %" PRId64 "]", name, key, big ? ">" : "", kv->i, lo, hi);
	*out = kv->i;
	return 0;
}

int gguf_get_float(const struct gguf_file *f, const char *key, double *out,
		   const char *name, struct err *e)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return 1;
	if (kv->type != GGUF_F32 && kv->type != GGUF_F64)
		return err_set(e, "%s: key '%s': type %s, expected FLOAT32 or FLOAT64", name,
			       key, vtype_names[kv->type]);
	*out = kv->f;
	return 0;
}

int gguf_get_str(const struct gguf_file *f, const char *key, const char **s,
		 uint64_t *len, const char *name, struct err *e)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return 1;
	if (kv->type != GGUF_STRING)
		return err_set(e, "%s: key '%s': type %s, expected STRING", name, key,
			       vtype_names[kv->type]);
	*s = kv->s;
	*len = kv->slen;
	return 0;
}

int gguf_get_bool(const struct gguf_file *f, const char *key, bool *out,
		  const char *name, struct err *e)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return 1;
	if (kv->type != GGUF_BOOL)
		return err_set(e, "%s: key '%s': type %s, expected BOOL", name, key,
			       vtype_names[kv->type]);
	*out = kv->u != 0;
	return 0;
}

/* A string for a person: in double quotes, cut at 60 bytes (and back to
 * a whole UTF-8 character), control characters, quotes and backslashes as
 * \xNN, so that it stays one printable line. */
static void text_str(const char *s, uint64_t n, char *buf, size_t cap)
{
	char tmp[64];
	size_t k = n > 60 ? 60 : (size_t)n;
	memcpy(tmp, s, k);
	tmp[k] = 0;
	for (size_t i = 0; i < k; i++)
		if (!tmp[i])
			tmp[i] = '?';
	while (k && !utf8_valid(tmp))
		tmp[--k] = 0;
	size_t o = 0;
	buf[o++] = '"';
	for (size_t i = 0; i < k && o + 6 < cap; i++) {
		unsigned char c = (unsigned char)tmp[i];
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	snprintf(buf + o, cap - o, "\"%s", n > k ? "..." : "");
}

static void scalar_text(const struct gguf_kv *kv, enum gguf_vtype t, char *buf, size_t cap)
{
	switch (t) {
	case GGUF_F32: case GGUF_F64: snprintf(buf, cap, "%.9g", kv->f); break;
	case GGUF_BOOL: snprintf(buf, cap, "%s", kv->u ? "true" : "false"); break;
	case GGUF_STRING: text_str(kv->s, kv->slen, buf, cap); break;
	default:
		if (is_unsigned(t))
			snprintf(buf, cap, "%" PRIu64, kv->u);
		else
			snprintf(buf, cap, "%" PRId64, kv->i);
	}
}

void gguf_kv_text(const struct gguf_kv *kv, char *buf, size_t cap)
{
	if (kv->type != GGUF_ARRAY) {
		scalar_text(kv, kv->type, buf, cap);
		return;
	}
	size_t o = (size_t)snprintf(buf, cap, "[%" PRIu64 " x %s]", kv->n,
				    vtype_names[kv->atype]);
	const unsigned char *pos = kv->arr;
	for (uint64_t i = 0; i < kv->n && i < 4 && o + 1 < cap; i++) {
		struct gguf_kv one = { .type = kv->atype };
		if (kv->atype == GGUF_STRING) {
			one.s = gguf_arr_str(&pos, &one.slen);
		} else if (kv->atype == GGUF_F32 || kv->atype == GGUF_F64) {
			one.f = gguf_arr_float(kv, i);
		} else {
			one.i = gguf_arr_int(kv, i);
			one.u = (uint64_t)le(kv->arr + i * vtype_size[kv->atype],
					     vtype_size[kv->atype]);
		}
		char v[160];
		scalar_text(&one, kv->atype, v, sizeof v);
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : " ", v);
	}
	if (kv->n > 4 && o + 1 < cap)
		snprintf(buf + o, cap - o, ", ...");
}
