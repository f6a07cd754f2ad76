/* gguf_write: see gguf_write.h. */
#include "format/gguf_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN GGUF_DEFAULT_ALIGNMENT

void gguf_w_init(struct gguf_writer *w)
{
	memset(w, 0, sizeof *w);
}

void gguf_w_free(struct gguf_writer *w)
{
	free(w->kv.p);
	free(w->info.p);
	free(w->bytes);
	memset(w, 0, sizeof *w);
}

static void put(struct gguf_writer *w, int to_info, const void *p, size_t n)
{
	sbuf_put(to_info ? &w->info : &w->kv, p, n);
}

static void put_le(struct gguf_writer *w, int to_info, uint64_t v, int bytes)
{
	unsigned char b[8];
	for (int i = 0; i < bytes; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(w, to_info, b, (size_t)bytes);
}

static void put_str(struct gguf_writer *w, int to_info, const char *s, size_t n)
{
	put_le(w, to_info, n, 8);
	put(w, to_info, s, n);
}

static void key(struct gguf_writer *w, const char *k, enum gguf_vtype t)
{
	put_str(w, 0, k, strlen(k));
	put_le(w, 0, (uint64_t)t, 4);
	w->nkv++;
}

void gguf_w_u32(struct gguf_writer *w, const char *k, uint32_t v)
{
	key(w, k, GGUF_U32);
	put_le(w, 0, v, 4);
}

void gguf_w_i32(struct gguf_writer *w, const char *k, int32_t v)
{
	key(w, k, GGUF_I32);
	put_le(w, 0, (uint32_t)v, 4);
}

void gguf_w_f32(struct gguf_writer *w, const char *k, float v)
{
	uint32_t b;
	memcpy(&b, &v, 4);
	key(w, k, GGUF_F32);
	put_le(w, 0, b, 4);
}

void gguf_w_bool(struct gguf_writer *w, const char *k, int v)
{
	key(w, k, GGUF_BOOL);
	put_le(w, 0, v ? 1 : 0, 1);
}

void gguf_w_str(struct gguf_writer *w, const char *k, const char *s, size_t n)
{
	key(w, k, GGUF_STRING);
	put_str(w, 0, s, n);
}

void gguf_w_strs(struct gguf_writer *w, const char *k, const struct vocab_str *s, size_t n)
{
	key(w, k, GGUF_ARRAY);
	put_le(w, 0, GGUF_STRING, 4);
	put_le(w, 0, n, 8);
	for (size_t i = 0; i < n; i++)
		put_str(w, 0, s[i].s, s[i].len);
}

void gguf_w_i32s(struct gguf_writer *w, const char *k, const int32_t *v, size_t n)
{
	key(w, k, GGUF_ARRAY);
	put_le(w, 0, GGUF_I32, 4);
	put_le(w, 0, n, 8);
	for (size_t i = 0; i < n; i++)
		put_le(w, 0, (uint32_t)v[i], 4);
}

static uint64_t padded(uint64_t x)
{
	return (x + ALIGN - 1) / ALIGN * ALIGN;
}

void gguf_w_tensor(struct gguf_writer *w, const char *name, enum gguf_ttype type,
		   int ndim, const int64_t *ne)
{
	uint64_t blk = gguf_ttype_block(type), n = 1;
	for (int d = 0; d < ndim; d++)
		n *= (uint64_t)ne[d];
	if (!w->bad[0] && (strlen(name) >= GGUF_MAX_NAME || !blk || ndim < 1 ||
			   ndim > GGUF_MAX_DIMS || ne[0] % (int64_t)blk))
		snprintf(w->bad, sizeof w->bad, "tensor '%.64s': cannot be stored as %s", name,
			 blk ? gguf_ttype_name(type) : "that type");
	uint64_t *b = realloc(w->bytes, sizeof *b * (w->ntensors + 1));
	if (!b) {
		snprintf(w->bad, sizeof w->bad, "out of memory");
		return;
	}
	w->bytes = b;
	if (w->bad[0])
		return;
	put_str(w, 1, name, strlen(name));
	put_le(w, 1, (uint64_t)ndim, 4);
	for (int d = 0; d < ndim; d++)
		put_le(w, 1, (uint64_t)ne[d], 8);
	put_le(w, 1, (uint64_t)type, 4);
	put_le(w, 1, w->data_end, 8);
	w->bytes[w->ntensors++] = n / blk * gguf_ttype_size(type);
	w->data_end = padded(w->data_end + n / blk * gguf_ttype_size(type));
}

static int out(FILE *fp, const void *p, size_t n, const char *name, struct err *e)
{
	if (n && fwrite(p, 1, n, fp) != n)
		return err_set(e, "%s: write error: %s", name, strerror(errno));
	return 0;
}

static int zeros(FILE *fp, uint64_t n, const char *name, struct err *e)
{
	static const unsigned char z[ALIGN];
	return out(fp, z, (size_t)n, name, e);
}

int gguf_w_header(struct gguf_writer *w, FILE *fp, const char *name, struct err *e)
{
	if (w->kv.oom || w->info.oom)
		snprintf(w->bad, sizeof w->bad, "out of memory");
	if (w->bad[0])
		return err_set(e, "%s: %s", name, w->bad);
	unsigned char h[24];
	memcpy(h, GGUF_MAGIC, 4);
	uint64_t f[3] = { 3, w->ntensors, w->nkv };
	for (int i = 0; i < 4; i++)
		h[4 + i] = (unsigned char)(f[0] >> (8 * i));
	for (int i = 0; i < 8; i++) {
		h[8 + i] = (unsigned char)(f[1] >> (8 * i));
		h[16 + i] = (unsigned char)(f[2] >> (8 * i));
	}
	uint64_t len = 24 + w->kv.n + w->info.n;
	return out(fp, h, 24, name, e) < 0 || out(fp, w->kv.p, w->kv.n, name, e) < 0 ||
	       out(fp, w->info.p, w->info.n, name, e) < 0 ||
	       zeros(fp, padded(len) - len, name, e) < 0 ? -1 : 0;
}

int gguf_w_data(struct gguf_writer *w, FILE *fp, const void *data, const char *name,
		struct err *e)
{
	uint64_t n = w->bytes[w->next++];
	return out(fp, data, (size_t)n, name, e) < 0 ||
	       zeros(fp, padded(n) - n, name, e) < 0 ? -1 : 0;
}
