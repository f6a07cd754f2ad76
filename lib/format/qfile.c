/* qfile: see qfile.h. The checks run in the order of trust: the header
 * against the file, the sections, the configs, each index entry alone, the
 * entries against the scheme, then the list against the config's manifest. */
#include "format/qfile.h"
#include "core/jsonutil.h"
#include "format/manifest.h"
#include "core/bf16.h"
#include "core/mapfile.h"
#include "kernels/quant.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* An IEEE half (an int4 scale), widened exactly. */
static float rd_half(const unsigned char *p)
{
	return f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

static void wr32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void wr64(unsigned char *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

static const char *const type_names[] = { "f32", "bf16", "int8", "int4" };

const char *qfile_type_name(enum wtype t)
{
	return type_names[t];
}

bool qfile_quantizes(const char *name, int ndim, bool embeddings)
{
	return ndim == 2 && (embeddings || strcmp(name, QF_EMBED_NAME) != 0);
}

uint64_t qfile_data_len(enum wtype t, int ndim, const int64_t *shape)
{
	uint64_t n = (uint64_t)shape[0] * (ndim == 2 ? (uint64_t)shape[1] : 1);
	switch (t) {
	case WT_F32: return n * 4;
	case WT_BF16:
	case WT_F16: return n * 2;
	case WT_Q8: return n;
	case WT_Q4: return n / 2;
	default: return 0;  /* a container holds no K-quant */
	}
}

uint64_t qfile_scales_len(enum wtype t, const int64_t *shape, int group_size)
{
	if (t == WT_Q8)
		return (uint64_t)shape[0] * 4;
	if (t == WT_Q4)
		return (uint64_t)shape[0] * (uint64_t)(shape[1] / group_size) * 2;
	return 0;
}

static uint64_t align_up(uint64_t v)
{
	return (v + QF_ALIGN - 1) / QF_ALIGN * QF_ALIGN;
}

/* ---- reading ---- */

uint32_t qfile_version_of(const char *path)
{
	struct err e;
	int fd = file_open_regular(path, NULL, &e);
	if (fd < 0)
		return 0;
	unsigned char h[12];
	bool yes = read(fd, h, sizeof h) == (ssize_t)sizeof h && memcmp(h, QF_MAGIC, 8) == 0;
	close(fd);
	return yes ? rd32(h + 8) : 0;
}

bool qfile_sniff(const char *path)
{
	return qfile_version_of(path) != 0;
}

/* A section [off, off + len) that must start exactly at *pos, inside the
 * file; advances *pos. */
static int section(const unsigned char *hdr, const char *what, uint64_t *pos,
		   size_t size, uint64_t *off, uint64_t *len, const char *name,
		   struct err *e)
{
	*off = rd64(hdr);
	*len = rd64(hdr + 8);
	if (*off != *pos)
		return err_set(e, "%s: %s: offset %" PRIu64 ", expected %" PRIu64,
			       name, what, *off, *pos);
	if (*len > size - *off)
		return err_set(e, "%s: %s: [%" PRIu64 ", +%" PRIu64 ") is outside the file (%zu bytes)",
			       name, what, *off, *len, size);
	*pos = *off + *len;
	return 0;
}

/* One region of a tensor (its data or its scales): aligned, inside the
 * file, and where the writer puts it, at the first aligned offset after
 * the previous region: a gap means that a length (a shape, the group
 * size) is not the one the file was written with. */
static int region(const char *tn, const char *what, uint64_t off, uint64_t len,
		  uint64_t *prev_end, size_t size, const char *name, struct err *e)
{
	if (off % QF_ALIGN != 0)
		return err_set(e, "%s: tensor %s: %s offset %" PRIu64 " is not a multiple of %d",
			       name, tn, what, off, QF_ALIGN);
	if (off > size || len > size - off)
		return err_set(e, "%s: tensor %s: %s [%" PRIu64 ", +%" PRIu64 ") is outside the file (%zu bytes)",
			       name, tn, what, off, len, size);
	if (off < *prev_end)
		return err_set(e, "%s: tensor %s: %s at %" PRIu64 " overlaps what precedes it (up to %" PRIu64 ")",
			       name, tn, what, off, *prev_end);
	if (off != align_up(*prev_end))
		return err_set(e, "%s: tensor %s: %s at %" PRIu64 ", not at %" PRIu64 " right after "
			       "what precedes it (a shape or the group size is not the one written)",
			       name, tn, what, off, align_up(*prev_end));
	*prev_end = off + len;
	return 0;
}

static int check_entry(struct qfile *f, int i, const unsigned char *p,
		       uint64_t *prev_end, size_t size, const char *name, struct err *e)
{
	struct qtensor *t = &f->t[i];
	if (memchr(p, 0, QF_NAME) == NULL)
		return err_set(e, "%s: tensor %d: name is not NUL-terminated", name, i);
	memcpy(t->name, p, QF_NAME);
	if (t->name[0] == 0 || !utf8_valid(t->name))
		return err_set(e, "%s: tensor %d: name is empty or not UTF-8", name, i);
	char tn[QF_NAME + 16];
	json_quote(tn, sizeof tn, t->name);
	uint32_t type = rd32(p + 80), ndim = rd32(p + 84);
	if (type > WT_Q4)
		return err_set(e, "%s: tensor %s: unknown type %" PRIu32, name, tn, type);
	t->type = (enum wtype)type;
	if (ndim != 1 && ndim != 2)
		return err_set(e, "%s: tensor %s: %" PRIu32 " dimensions (1 or 2)", name, tn, ndim);
	t->ndim = (int)ndim;
	for (int d = 0; d < 2; d++) {
		uint64_t s = rd64(p + 88 + 8 * d);
		if (d < t->ndim ? (s == 0 || s > INT32_MAX) : s != 0)
			return err_set(e, "%s: tensor %s: dimension %d is %" PRIu64,
				       name, tn, d, s);
		t->shape[d] = (int64_t)s;
	}
	/* The scheme. */
	bool quantized = t->type == WT_Q8 || t->type == WT_Q4;
	bool want = qfile_quantizes(t->name, t->ndim, f->embeddings);
	if (quantized && t->type != (f->level == 8 ? WT_Q8 : WT_Q4))
		return err_set(e, "%s: tensor %s: %s in an int%d container",
			       name, tn, type_names[t->type], f->level);
	if (quantized != want)
		return err_set(e, "%s: tensor %s: %s, but the scheme %s it",
			       name, tn, type_names[t->type], want ? "quantizes" : "keeps it float, not");
	if (t->type == WT_Q4 && q4_check_shape((int)t->shape[1], f->group_size, e) < 0) {
		char why[sizeof e->msg];
		memcpy(why, e->msg, sizeof why);
		return err_set(e, "%s: tensor %s: %s", name, tn, why);
	}
	/* The regions. */
	t->data_off = rd64(p + 104);
	t->data_len = rd64(p + 112);
	t->scales_off = rd64(p + 120);
	uint64_t dl = qfile_data_len(t->type, t->ndim, t->shape);
	if (t->data_len != dl)
		return err_set(e, "%s: tensor %s: data length %" PRIu64 ", expected %" PRIu64 " for %s",
			       name, tn, t->data_len, dl, type_names[t->type]);
	if (region(tn, "data", t->data_off, t->data_len, prev_end, size, name, e) < 0)
		return -1;
	t->data = f->base + t->data_off;
	t->scales = NULL;
	if (!quantized) {
		if (t->scales_off != 0)
			return err_set(e, "%s: tensor %s: %s with a scales offset", name, tn,
				       type_names[t->type]);
		return 0;
	}
	uint64_t sl = qfile_scales_len(t->type, t->shape, f->group_size);
	if (region(tn, "scales", t->scales_off, sl, prev_end, size, name, e) < 0)
		return -1;
	const unsigned char *sp = f->base + t->scales_off;
	if (t->type == WT_Q8)
		t->scales = (const float *)(const void *)sp;
	for (uint64_t k = 0; k < sl / (t->type == WT_Q8 ? 4 : 2); k++)
		if (!isfinite(t->type == WT_Q8 ? t->scales[k] : rd_half(sp + 2 * k)))
			return err_set(e, "%s: tensor %s: scale %" PRIu64 " is not finite",
				       name, tn, k);
	return 0;
}

/* Every int4 tensor's halves, widened into f->q4_scales. */
static int widen_q4_scales(struct qfile *f, const char *name, struct err *e)
{
	size_t n = 0;
	for (int i = 0; i < f->ntensors; i++)
		if (f->t[i].type == WT_Q4)
			n += qfile_scales_len(WT_Q4, f->t[i].shape, f->group_size) / 2;
	if (n == 0)
		return 0;
	f->q4_scales = anon_alloc(n * sizeof(float));
	if (!f->q4_scales)
		return err_set(e, "%s: cannot allocate %zu bytes for the int4 scales: %s", name,
			       n * sizeof(float), strerror(errno));
	f->q4_scales_bytes = n * sizeof(float);
	float *s = f->q4_scales;
	for (int i = 0; i < f->ntensors; i++) {
		struct qtensor *t = &f->t[i];
		if (t->type != WT_Q4)
			continue;
		const unsigned char *sp = f->base + t->scales_off;
		size_t k = qfile_scales_len(WT_Q4, t->shape, f->group_size) / 2;
		for (size_t j = 0; j < k; j++)
			s[j] = rd_half(sp + 2 * j);
		t->scales = s;
		s += k;
	}
	return 0;
}

/* A container of another version than this build's: one line saying so,
 * and for an older one, how to remake it. */
static int bad_version(const unsigned char *buf, uint32_t version, const char *name,
		       struct err *e)
{
	if (version > QF_VERSION)
		return err_set(e, "%s: version %" PRIu32 " is not supported (this build reads "
			       "version %d)", name, version, QF_VERSION);
	uint32_t level = rd32(buf + 12), group = rd32(buf + 16);
	char how[96] = " --level int8|int4";
	if (level == 8 || level == 4)
		snprintf(how, sizeof how, " --level int%" PRIu32 "%s", level,
			 rd32(buf + 20) & QF_EMBEDDINGS ? " --embeddings" : "");
	if (level == 4 && group != Q4_DEFAULT_GROUP)
		snprintf(how + strlen(how), sizeof how - strlen(how), " --group-size %" PRIu32,
			 group);
	return err_set(e, "%s: container version %" PRIu32 " is older than this build's (%d, "
		       "with half int4 scales): remake it with quantize MODEL -o %s%s", name,
		       version, QF_VERSION, name, how);
}

/* The tensor list against the config's manifest. */
static int check_manifest(const struct qfile *f, const char *name, struct err *e)
{
	struct manifest want, have;
	manifest_init(&want);
	manifest_init(&have);
	int rc = -1;
	if (manifest_build(&want, &f->cfg, e) < 0)
		goto out;
	for (int i = 0; i < f->ntensors; i++)
		if (manifest_add(&have, f->t[i].name, f->t[i].ndim, f->t[i].shape, e) < 0)
			goto out;
	rc = manifest_check(&want, &have, name, "its embedded config.json", e);
out:
	manifest_free(&want);
	manifest_free(&have);
	return rc;
}

int qfile_parse(struct qfile *f, const unsigned char *buf, size_t size,
		const char *name, struct err *e)
{
	memset(f, 0, sizeof *f);
	f->base = buf;
	f->size = size;
	if (size < QF_HEADER)
		return err_set(e, "%s: truncated: %zu bytes, the header alone is %d",
			       name, size, QF_HEADER);
	if (memcmp(buf, QF_MAGIC, 8) != 0)
		return err_set(e, "%s: not a qwenpipe container (bad magic)", name);
	uint32_t version = rd32(buf + 8);
	if (version != QF_VERSION)
		return bad_version(buf, version, name, e);
	uint64_t fsize = rd64(buf + 32);
	if (fsize != size)
		return err_set(e, "%s: %s: the header says %" PRIu64 " bytes, the file has %zu",
			       name, fsize > size ? "truncated" : "trailing bytes", fsize, size);
	uint32_t level = rd32(buf + 12), group = rd32(buf + 16), flags = rd32(buf + 20);
	if (level != 8 && level != 4)
		return err_set(e, "%s: level %" PRIu32 " is neither 8 nor 4", name, level);
	f->level = (int)level;
	if (level == 8 && group != 0)
		return err_set(e, "%s: int8 with group size %" PRIu32 " (must be 0)", name, group);
	if (level == 4 && (group == 0 || group > INT32_MAX || group % Q4_BLOCK != 0))
		return err_set(e, "%s: int4 group size %" PRIu32 " is not a positive multiple of %d",
			       name, group, Q4_BLOCK);
	f->group_size = (int)group;
	if (flags & ~QF_EMBEDDINGS)
		return err_set(e, "%s: unknown flags 0x%" PRIx32, name, flags);
	f->embeddings = flags & QF_EMBEDDINGS;
	bool reserved = rd32(buf + 28) != 0;
	for (int i = 104; i < QF_HEADER; i++)
		reserved |= buf[i] != 0;
	if (reserved)
		return err_set(e, "%s: reserved header bytes are not zero", name);
	uint32_t n = rd32(buf + 24);

	uint64_t pos = QF_HEADER, off, len;
	if (section(buf + 40, "config.json", &pos, size, &off, &len, name, e) < 0)
		return -1;
	f->config_json = (const char *)buf + off;
	f->config_len = len;
	if (section(buf + 56, "generation_config.json", &pos, size, &off, &len, name, e) < 0)
		return -1;
	f->gen_json = (const char *)buf + off;
	f->gen_len = len;
	if (section(buf + 72, "tokenizer.json", &pos, size, &off, &len, name, e) < 0)
		return -1;
	f->tokenizer_json = (const char *)buf + off;
	f->tokenizer_len = len;
	if (section(buf + 88, "tensor index", &pos, size, &off, &len, name, e) < 0)
		return -1;
	if (len != (uint64_t)n * QF_ENTRY)
		return err_set(e, "%s: tensor index: %" PRIu64 " bytes, expected %" PRIu32 " x %d",
			       name, len, n, QF_ENTRY);

	char what[256];
	snprintf(what, sizeof what, "%s: config.json", name);
	if (config_parse(&f->cfg, f->config_json, f->config_len, what, e) < 0)
		return -1;
	gen_config_default(&f->gen, &f->cfg);
	snprintf(what, sizeof what, "%s: generation_config.json", name);
	if (gen_config_parse(&f->gen, f->gen_json, f->gen_len, what, e) < 0)
		return -1;

	f->t = calloc(n ? n : 1, sizeof *f->t);
	if (!f->t)
		return err_set(e, "%s: out of memory", name);
	f->ntensors = (int)n;
	uint64_t prev_end = pos;
	for (uint32_t i = 0; i < n; i++)
		if (check_entry(f, (int)i, buf + off + (uint64_t)i * QF_ENTRY, &prev_end,
				size, name, e) < 0)
			goto fail;
	if (prev_end != size) {
		err_set(e, "%s: %" PRIu64 " bytes after the last tensor's end (%" PRIu64 "): the "
			"file is not what its index says", name, (uint64_t)size - prev_end, prev_end);
		goto fail;
	}
	if (check_manifest(f, name, e) < 0 || widen_q4_scales(f, name, e) < 0)
		goto fail;
	return 0;
fail:
	free(f->t);
	f->t = NULL;
	return -1;
}

int qfile_open(struct qfile *f, const char *path, struct err *e)
{
	struct mapfile m;
	if (mapfile_open(&m, path, e) < 0)
		return -1;
	if (qfile_parse(f, m.data, m.size, path, e) < 0) {
		mapfile_close(&m);
		return -1;
	}
	f->map = m;
	return 0;
}

void qfile_close(struct qfile *f)
{
	free(f->t);
	f->t = NULL;
	if (f->q4_scales)
		munmap(f->q4_scales, f->q4_scales_bytes);
	f->q4_scales = NULL;
	mapfile_close(&f->map);
}

const struct qtensor *qfile_find(const struct qfile *f, const char *name)
{
	for (int i = 0; i < f->ntensors; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

struct wmat qtensor_wmat(const struct qfile *f, const struct qtensor *t)
{
	return (struct wmat){
		.type = t->type, .rows = (int)t->shape[0], .cols = (int)t->shape[1],
		.data = t->data, .scales = t->scales,
		.group_size = t->type == WT_Q4 ? f->group_size : 0,
	};
}

/* ---- writing ---- */

static int write_all(struct qfile_writer *w, const void *p, size_t n, struct err *e)
{
	if (n && fwrite(p, 1, n, w->out.fp) != n)
		return err_write(e, errno, "%s: write error", w->out.path);
	w->pos += n;
	return 0;
}

/* Zero padding up to off. */
static int pad_to(struct qfile_writer *w, uint64_t off, struct err *e)
{
	static const unsigned char zero[QF_ALIGN];
	return write_all(w, zero, (size_t)(off - w->pos), e);
}

static void qfile_writer_free(struct qfile_writer *w)
{
	free(w->data_off);
	free(w->scales_off);
	if (w->t)
		for (int i = 0; i < w->ntensors; i++)
			free((char *)w->t[i].name);
	free(w->t);
	memset(w, 0, sizeof *w);
}

void qfile_write_abort(struct qfile_writer *w)
{
	outfile_abort(&w->out);
	qfile_writer_free(w);
}

int qfile_write_begin(struct qfile_writer *w, const char *dest, const struct qfile_header *h,
	     const struct qfile_entry *t, int n, struct err *e)
{
	memset(w, 0, sizeof *w);
	w->ntensors = n;
	w->group_size = h->group_size;
	w->data_off = calloc(n ? n : 1, sizeof *w->data_off);
	w->scales_off = calloc(n ? n : 1, sizeof *w->scales_off);
	w->t = calloc(n ? n : 1, sizeof *w->t);
	if (!w->data_off || !w->scales_off || !w->t) {
		qfile_writer_free(w);
		return err_set(e, "%s: out of memory", dest);
	}
	if (outfile_open(&w->out, dest, e) < 0) {
		qfile_writer_free(w);
		return -1;
	}

	/* Layout. */
	uint64_t cfg_off = QF_HEADER, gen_off = cfg_off + h->config_len;
	uint64_t tok_off = gen_off + h->gen_len, idx_off = tok_off + h->tokenizer_len;
	uint64_t idx_len = (uint64_t)n * QF_ENTRY, pos = idx_off + idx_len;
	for (int i = 0; i < n; i++) {
		w->t[i] = t[i];
		w->t[i].name = strdup(t[i].name);
		if (!w->t[i].name || strlen(t[i].name) >= QF_NAME) {
			qfile_write_abort(w);
			return err_set(e, "%s: tensor name too long or out of memory", dest);
		}
		w->data_off[i] = align_up(pos);
		pos = w->data_off[i] + qfile_data_len(t[i].type, t[i].ndim, t[i].shape);
		uint64_t sl = qfile_scales_len(t[i].type, t[i].shape, h->group_size);
		if (sl) {
			w->scales_off[i] = align_up(pos);
			pos = w->scales_off[i] + sl;
		}
	}

	unsigned char hdr[QF_HEADER] = { 0 };
	memcpy(hdr, QF_MAGIC, 8);
	wr32(hdr + 8, QF_VERSION);
	wr32(hdr + 12, (uint32_t)h->level);
	wr32(hdr + 16, (uint32_t)h->group_size);
	wr32(hdr + 20, h->embeddings ? QF_EMBEDDINGS : 0);
	wr32(hdr + 24, (uint32_t)n);
	wr64(hdr + 32, pos);
	wr64(hdr + 40, cfg_off);
	wr64(hdr + 48, h->config_len);
	wr64(hdr + 56, gen_off);
	wr64(hdr + 64, h->gen_len);
	wr64(hdr + 72, tok_off);
	wr64(hdr + 80, h->tokenizer_len);
	wr64(hdr + 88, idx_off);
	wr64(hdr + 96, idx_len);
	if (write_all(w, hdr, sizeof hdr, e) < 0 ||
	    write_all(w, h->config_json, h->config_len, e) < 0 ||
	    write_all(w, h->gen_json, h->gen_len, e) < 0 ||
	    write_all(w, h->tokenizer_json, h->tokenizer_len, e) < 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		unsigned char ent[QF_ENTRY] = { 0 };
		memcpy(ent, t[i].name, strlen(t[i].name));
		wr32(ent + 80, (uint32_t)t[i].type);
		wr32(ent + 84, (uint32_t)t[i].ndim);
		wr64(ent + 88, (uint64_t)t[i].shape[0]);
		wr64(ent + 96, t[i].ndim == 2 ? (uint64_t)t[i].shape[1] : 0);
		wr64(ent + 104, w->data_off[i]);
		wr64(ent + 112, qfile_data_len(t[i].type, t[i].ndim, t[i].shape));
		wr64(ent + 120, w->scales_off[i]);
		if (write_all(w, ent, sizeof ent, e) < 0)
			goto fail;
	}
	return 0;
fail:
	qfile_write_abort(w);
	return -1;
}

int qfile_write_tensor(struct qfile_writer *w, const void *data, const float *scales,
		    struct err *e)
{
	const struct qfile_entry *t = &w->t[w->next];
	if (pad_to(w, w->data_off[w->next], e) < 0 ||
	    write_all(w, data, qfile_data_len(t->type, t->ndim, t->shape), e) < 0)
		return -1;
	uint64_t sl = qfile_scales_len(t->type, t->shape, w->group_size);
	if (sl && pad_to(w, w->scales_off[w->next], e) < 0)
		return -1;
	if (t->type == WT_Q8 && write_all(w, scales, sl, e) < 0)
		return -1;
	for (uint64_t k = 0; t->type == WT_Q4 && k < sl / 2;) {
		unsigned char b[1024];
		size_t n = 0;
		for (; n < sizeof b && k < sl / 2; n += 2, k++) {
			uint16_t h = f32_to_f16(scales[k]);
			if (f16_to_f32(h) != scales[k])
				return err_set(e, "%s: tensor %s: scale %g is not a half: a weight "
					       "beyond int4's range (8 x 65504); use --level int8",
					       w->out.path, t->name, (double)scales[k]);
			b[n] = (unsigned char)h;
			b[n + 1] = (unsigned char)(h >> 8);
		}
		if (write_all(w, b, n, e) < 0)
			return -1;
	}
	w->next++;
	return 0;
}

int qfile_write_commit(struct qfile_writer *w, struct err *e)
{
	assert(w->next == w->ntensors);
	if (outfile_commit(&w->out, e) < 0) {
		qfile_writer_free(w);
		return -1;
	}
	qfile_writer_free(w);
	return 0;
}
