/* stream: see stream.h for the byte layout. */
#include "format/stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_f32(unsigned char *p, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	put_u32(p, u);
}

static float get_f32(const unsigned char *p)
{
	uint32_t u = get_u32(p);
	float f;
	memcpy(&f, &u, 4);
	return f;
}

enum { FRAME_SIZE = 16 };  /* a frame's fixed part */
_Static_assert(FRAME_SIZE >= STREAM_END_SIZE, "one buffer reads either");

static int write_all(FILE *f, const void *buf, size_t n, struct err *e)
{
	if (n && fwrite(buf, 1, n, f) != n) {
		return err_write(e, errno, "write error");
	}
	return 0;
}

int stream_write_header(FILE *f, const struct stream_header *h, struct err *e)
{
	unsigned char b[STREAM_HEADER_SIZE] = {0};
	memcpy(b, STREAM_MAGIC, 8);
	put_u32(b + 8, STREAM_VERSION);
	put_u32(b + 12, h->n_vocab);
	put_u32(b + 16, h->dtype);
	put_u32(b + 20, h->n_eos);
	for (int i = 0; i < STREAM_MAX_EOS; i++)
		put_u32(b + 24 + 4 * i, (uint32_t)(i < (int)h->n_eos ? h->eos_ids[i] : -1));
	put_f32(b + 56, h->temperature);
	put_u32(b + 60, (uint32_t)h->top_k);
	put_f32(b + 64, h->top_p);
	put_f32(b + 68, h->min_p);
	put_f32(b + 72, h->repetition_penalty);
	put_u32(b + 76, h->flags);
	put_u32(b + 80, h->ctx);
	size_t len = strnlen(h->fifo_path, STREAM_PATH_MAX);
	if (len == STREAM_PATH_MAX)
		return err_set(e, "feedback path too long");
	memcpy(b + 144, h->fifo_path, len);
	if (write_all(f, b, sizeof b, e) < 0)
		return -1;
	/* The reader may wait on the header before anything else comes. */
	if (fflush(f) != 0)
		return err_write(e, errno, "write error");
	return 0;
}

int stream_write_frame(FILE *f, int32_t pos, const int32_t *fed, uint32_t n_fed,
		       int32_t draft, const float *logits, uint32_t n_vocab,
		       struct err *e)
{
	unsigned char b[FRAME_SIZE];
	memcpy(b, "FRME", 4);
	put_u32(b + 4, (uint32_t)pos);
	put_u32(b + 8, n_fed);
	put_u32(b + 12, (uint32_t)draft);
	if (write_all(f, b, sizeof b, e) < 0)
		return -1;
	/* x86-64 is little-endian: ids and floats go out as they are. */
	if (write_all(f, fed, 4 * (size_t)n_fed, e) < 0 ||
	    write_all(f, logits, 4 * (size_t)n_vocab, e) < 0)
		return -1;
	return 0;
}

int stream_write_end(int fd, const struct stream_end *end, struct err *e)
{
	unsigned char b[STREAM_END_SIZE];
	memcpy(b, "ENDG", 4);
	put_u32(b + 4, end->n_past);
	put_u32(b + 8, end->computed);
	put_u32(b + 12, end->ctx);
	ssize_t w;
	do
		w = write(fd, b, sizeof b);  /* 16 bytes: all or nothing on a pipe */
	while (w < 0 && errno == EINTR);
	if (w != (ssize_t)sizeof b)
		return err_write(e, w < 0 ? errno : EIO, "write error");
	return 0;
}

/* Reads exactly n bytes. Returns n, or the short count at EOF, or -1. */
static long read_full(FILE *f, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, f);
	if (got < n && ferror(f))
		return -1;
	return (long)got;
}

int stream_read_header(FILE *f, struct stream_header *h, const char *name,
		       struct err *e)
{
	unsigned char b[STREAM_HEADER_SIZE];
	long got = read_full(f, b, 8);
	if (got < 0)
		return err_set(e, "%s: read error: %s", name, strerror(errno));
	if (got == 0)
		return err_set(e, "%s: empty input, expected a logits stream", name);
	if (got < 8 || memcmp(b, STREAM_MAGIC, 8) != 0)
		return err_set(e, "%s: not a logits stream (bad magic)", name);
	got = read_full(f, b + 8, sizeof b - 8);
	if (got < 0)
		return err_set(e, "%s: read error: %s", name, strerror(errno));
	if (got < 4)
		return err_set(e, "%s: truncated logits stream header", name);
	uint32_t version = get_u32(b + 8);
	if (version != STREAM_VERSION)
		return err_set(e, "%s: logits stream version %u is not supported "
			       "(this reader knows version %d)", name, version,
			       STREAM_VERSION);
	if ((size_t)got < sizeof b - 8)
		return err_set(e, "%s: truncated logits stream header", name);
	memset(h, 0, sizeof *h);
	h->version = version;
	h->n_vocab = get_u32(b + 12);
	h->dtype = get_u32(b + 16);
	h->n_eos = get_u32(b + 20);
	if (h->n_vocab == 0 || h->n_vocab > (1u << 26))
		return err_set(e, "%s: logits stream header: bad vocabulary size %u",
			       name, h->n_vocab);
	if (h->dtype != 0)
		return err_set(e, "%s: logits stream header: unknown element type %u",
			       name, h->dtype);
	if (h->n_eos > STREAM_MAX_EOS)
		return err_set(e, "%s: logits stream header: %u end-of-sequence ids "
			       "(at most %d)", name, h->n_eos, STREAM_MAX_EOS);
	for (int i = 0; i < STREAM_MAX_EOS; i++)
		h->eos_ids[i] = (int32_t)get_u32(b + 24 + 4 * i);
	for (uint32_t i = 0; i < h->n_eos; i++)
		if (h->eos_ids[i] < 0 || (uint32_t)h->eos_ids[i] >= h->n_vocab)
			return err_set(e, "%s: logits stream header: end-of-sequence id "
				       "%d outside the vocabulary", name, h->eos_ids[i]);
	h->temperature = get_f32(b + 56);
	h->top_k = (int32_t)get_u32(b + 60);
	h->top_p = get_f32(b + 64);
	h->min_p = get_f32(b + 68);
	h->repetition_penalty = get_f32(b + 72);
	h->flags = get_u32(b + 76);
	h->ctx = get_u32(b + 80);
	if (memchr(b + 144, 0, STREAM_PATH_MAX) == NULL)
		return err_set(e, "%s: logits stream header: feedback path not terminated",
			       name);
	memcpy(h->fifo_path, b + 144, STREAM_PATH_MAX);
	return 0;
}

/* Reads n ids into fr->fed, growing it as the bytes arrive, so that a
 * corrupt count cannot make the reader allocate much more than the input
 * holds. Returns 0; 1 when the input ends first; -1 on a read error (errno
 * set); -2 out of memory. */
static int read_fed(FILE *f, struct stream_frame *fr, uint32_t n)
{
	enum { CHUNK = 1 << 16 };  /* ids per read */
	uint32_t have = 0;
	while (have < n) {
		uint32_t k = n - have < CHUNK ? n - have : CHUNK;
		if (have + k > fr->fed_cap) {
			uint32_t cap = fr->fed_cap > n / 2 ? n : 2 * fr->fed_cap;
			if (cap < have + k)
				cap = have + k;
			int32_t *p = realloc(fr->fed, 4 * (size_t)cap);
			if (!p)
				return -2;
			fr->fed = p;
			fr->fed_cap = cap;
		}
		long got = read_full(f, fr->fed + have, 4 * (size_t)k);
		if (got < 0)
			return -1;
		if ((size_t)got < 4 * (size_t)k)
			return 1;
		have += k;
	}
	return 0;
}

int stream_read_frame(FILE *f, const struct stream_header *h,
		      struct stream_frame *fr, const char *name, struct err *e)
{
	unsigned char b[FRAME_SIZE];  /* a frame's fixed part, or the end record */
	int32_t want = fr->took ? fr->draft : -1, prev = fr->pos;  /* stream_took */
	fr->ended = fr->took = 0;
	fr->draft = -1;
	long got = read_full(f, b, 4);
	if (got < 0)
		return err_set(e, "%s: read error: %s", name, strerror(errno));
	if (got == 0)
		return 0;
	if (got < 4)
		return err_set(e, "%s: truncated frame header", name);
	int end = memcmp(b, "ENDG", 4) == 0;
	size_t rest = (end ? STREAM_END_SIZE : FRAME_SIZE) - 4;
	got = read_full(f, b + 4, rest);
	if (got < 0)
		return err_set(e, "%s: read error: %s", name, strerror(errno));
	if ((size_t)got < rest)
		return err_set(e, end ? "%s: truncated end record" :
			       "%s: truncated frame header", name);
	if (end) {
		fr->ended = 1;
		fr->end.n_past = get_u32(b + 4);
		fr->end.computed = get_u32(b + 8);
		fr->end.ctx = get_u32(b + 12);
		return 0;
	}
	if (memcmp(b, "FRME", 4) != 0)
		return err_set(e, "%s: corrupt logits stream (bad frame marker)", name);
	int32_t pos = (int32_t)get_u32(b + 4);
	uint32_t n_fed = get_u32(b + 8);
	int32_t draft = (int32_t)get_u32(b + 12);
	if (pos < 0 || n_fed > (uint32_t)pos + 1)
		return err_set(e, "%s: corrupt frame (position %d, %u ids fed)",
			       name, pos, n_fed);
	if (draft < -1 || (draft >= 0 && (uint32_t)draft >= h->n_vocab))
		return err_set(e, "%s: corrupt frame at position %d: draft %d outside "
			       "the vocabulary", name, pos, draft);
	fr->draft = draft;
	if (!fr->logits) {
		fr->logits = malloc(4 * (size_t)h->n_vocab);
		if (!fr->logits)
			return err_set(e, "%s: out of memory", name);
	}
	fr->pos = pos;
	fr->n_fed = n_fed;
	int r = read_fed(f, fr, n_fed);
	if (r == 0) {
		got = read_full(f, fr->logits, 4 * (size_t)h->n_vocab);
		r = got < 0 ? -1 : (size_t)got < 4 * (size_t)h->n_vocab;
	}
	if (r == -2)
		return err_set(e, "%s: out of memory", name);
	if (r == -1)
		return err_set(e, "%s: read error: %s", name, strerror(errno));
	if (r == 1)
		return err_set(e, "%s: truncated frame at position %d", name, pos);
	for (uint32_t i = 0; i < n_fed; i++)
		if (fr->fed[i] < 0 || (uint32_t)fr->fed[i] >= h->n_vocab)
			return err_set(e, "%s: corrupt frame at position %d: id %d outside "
				       "the vocabulary", name, pos, fr->fed[i]);
	if (want >= 0 && (pos != prev + 1 || n_fed != 1 || fr->fed[0] != want))
		return err_set(e, "%s: corrupt logits stream: the frame at position %d "
			       "does not continue the draft %d", name, pos, want);
	return 1;
}

int stream_skip_batch(FILE *f, const struct stream_header *h,
		      struct stream_frame *fr, const char *name, struct err *e)
{
	while (fr->draft >= 0) {
		int32_t pos = fr->pos;
		int r = stream_read_frame(f, h, fr, name, e);
		if (r < 0)
			return -1;
		if (r == 0 && fr->ended)
			return err_set(e, "%s: corrupt logits stream: the end record "
				       "inside the batch after position %d", name, pos);
		if (r == 0)
			return 0;
		if (fr->pos != pos + 1)
			return err_set(e, "%s: corrupt logits stream: frame at position %d "
				       "in the batch after position %d", name, fr->pos, pos);
	}
	return 0;
}

int stream_took(FILE *f, const struct stream_header *h, struct stream_frame *fr,
		int32_t id, const char *name, struct err *e)
{
	if (fr->draft >= 0 && id == fr->draft) {
		fr->took = 1;
		return 1;
	}
	return stream_skip_batch(f, h, fr, name, e);
}

void stream_frame_free(struct stream_frame *fr)
{
	free(fr->fed);
	free(fr->logits);
	memset(fr, 0, sizeof *fr);
}
