/* tokenizer: see tokenizer.h.
 *
 * Loading is the slow part to get right: tokenizer.json is 7 MB, almost all
 * of it model.vocab (151,643 entries) and model.merges (151,387). Those two
 * are read by a small, strict JSON reader of our own straight from the
 * mapped file (cJSON would build half a million nodes first); every other
 * field is a few bytes of JSON handed to cJSON and checked there.
 */
#include "text/tokenizer.h"
#include "core/jsonutil.h"
#include "core/mapfile.h"
#include "text/pretok.h"
#include "core/utf8.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

struct added {
	const unsigned char *text; /* content, in t->strings */
	size_t len;
	int32_t id;
	int special;
};

struct tokenizer {
	char *path;
	int nfc;                   /* the normalizer is NFC (else none) */
	struct bpe bpe;
	/* decoding: token id's bytes are bytes[off[id] .. off[id + 1]) */
	int32_t n_ids;
	uint32_t *off;
	unsigned char *bytes;
	unsigned char *flags;      /* per id: F_EXISTS, F_SPECIAL */
	/* added tokens, longest first; first_byte marks their first bytes */
	struct added *added;
	size_t n_added;
	unsigned char first_byte[256];
	unsigned char *strings;    /* decoded JSON strings (added contents) */
	/* scratch: the normalized text of one stretch */
	unsigned char *norm;
	size_t norm_cap;
};

enum { F_EXISTS = 1, F_SPECIAL = 2 };

/* ---- the byte-level alphabet (GPT-2's bytes_to_unicode) ---- */

/* Printable bytes stand for themselves; the other 68 (controls, space,
 * DEL, C1, NBSP, soft hyphen) are moved to U+0100 and up, in byte order. */
static void alphabet(int32_t byte_cp[256], int16_t cp_byte[512])
{
	int extra = 0;
	for (int i = 0; i < 512; i++)
		cp_byte[i] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
				(b >= 0xAE && b <= 0xFF);
		byte_cp[b] = printable ? b : 256 + extra++;
		cp_byte[byte_cp[b]] = (int16_t)b;
	}
}

/* ---- a strict reader for the big arrays ---- */

struct jr {
	const char *start, *p, *end;
	struct err *e;
	unsigned char *out;        /* decoded strings go here, one after another */
};

/* "line N: problem" at the reader's position. */
static int jr_fail(struct jr *r, const char *what)
{
	long line = 1;
	for (const char *q = r->start; q < r->p && q < r->end; q++)
		line += *q == '\n';
	return err_set(r->e, "line %ld: %s", line, what);
}

/* s[0..n) (untrusted: any bytes) quoted for a message, as json_quote. */
static char *quote_n(char *buf, size_t cap, const unsigned char *s, size_t n)
{
	char raw[96];
	snprintf(raw, sizeof raw, "%.*s", (int)(n < sizeof raw ? n : sizeof raw - 1),
		 (const char *)s);
	return json_quote(buf, cap, raw);
}

static void jr_ws(struct jr *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

/* Skips whitespace and consumes c, or fails. */
static int jr_expect(struct jr *r, char c)
{
	jr_ws(r);
	if (r->p >= r->end || *r->p != c) {
		char msg[32];
		snprintf(msg, sizeof msg, "expected '%c'", c);
		return jr_fail(r, msg);
	}
	r->p++;
	return 0;
}

/* Skips whitespace; consumes c and returns 1 if it is next, else 0. */
static int jr_accept(struct jr *r, char c)
{
	jr_ws(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return 1;
	}
	return 0;
}

static int hex4(const char *p, int32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			return -1;
		*v = *v << 4 | d;
	}
	return 0;
}

/* Reads a JSON string, decoded to UTF-8, into r->out: *s points at it,
 * *len is its length, and r->out moves past it. */
static int jr_string(struct jr *r, const unsigned char **s, size_t *len)
{
	if (jr_expect(r, '"') < 0)
		return -1;
	/* Most strings have no escapes: point into the file itself. */
	const char *q = r->p;
	while (q < r->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
		q++;
	if (q < r->end && *q == '"') {
		*s = (const unsigned char *)r->p;
		*len = (size_t)(q - r->p);
		r->p = q + 1;
		return 0;
	}
	unsigned char *o = r->out;
	*s = o;
	for (;;) {
		if (r->p >= r->end)
			return jr_fail(r, "unterminated string");
		unsigned char c = (unsigned char)*r->p++;
		if (c == '"')
			break;
		if (c < 0x20)
			return jr_fail(r, "control character in string");
		if (c != '\\') {
			*o++ = c;
			continue;
		}
		if (r->p >= r->end)
			return jr_fail(r, "unterminated string");
		c = (unsigned char)*r->p++;
		switch (c) {
		case '"': case '\\': case '/': *o++ = c; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			int32_t cp, lo;
			if (r->end - r->p < 4 || hex4(r->p, &cp) < 0)
				return jr_fail(r, "bad \\u escape");
			r->p += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
				    hex4(r->p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
					return jr_fail(r, "unpaired surrogate in \\u escape");
				r->p += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				return jr_fail(r, "unpaired surrogate in \\u escape");
			}
			o += utf8_encode(cp, o);
			break;
		}
		default:
			return jr_fail(r, "bad escape in string");
		}
	}
	*len = (size_t)(o - *s);
	r->out = o;
	return 0;
}

/* Reads a whole number in [0, 2^31). */
static int jr_id(struct jr *r, int32_t *id)
{
	jr_ws(r);
	int64_t v = 0;
	const char *q = r->p;
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9' && v < INT32_MAX)
		v = v * 10 + (*r->p++ - '0');
	if (r->p == q || v > INT32_MAX - 1 ||
	    (r->p < r->end && (*r->p == '.' || *r->p == 'e' || *r->p == 'E' ||
			       (*r->p >= '0' && *r->p <= '9'))))
		return jr_fail(r, "expected a token id (a whole number below 2^31)");
	*id = (int32_t)v;
	return 0;
}

/* What jr_skip stops at: 1 string, 2 open, 3 close, 4 comma. */
static const unsigned char SKIP_STOP[256] = {
	['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3, [','] = 4,
};

/* Skips one JSON value (any kind), checking only its bracketing and its
 * strings; cJSON checks the rest when the value is one we use. *items (if
 * not NULL) gets the number of elements of an array or object. This is
 * the pass over the whole 7 MB file, so it is a tight loop. */
static int jr_skip(struct jr *r, size_t *items)
{
	size_t commas = 0, depth = 0;
	jr_ws(r);
	if (items)
		*items = 0;
	if (r->p < r->end && *r->p != '"' && *r->p != '{' && *r->p != '[') {
		/* a bare scalar: runs to the next delimiter */
		while (r->p < r->end && !strchr(",}] \n\r\t", *r->p))
			r->p++;
		return 0;
	}
	int empty = 0;
	do {
		while (r->p < r->end && !SKIP_STOP[(unsigned char)*r->p])
			r->p++;
		if (r->p >= r->end)
			return jr_fail(r, "unexpected end of file");
		switch (SKIP_STOP[(unsigned char)*r->p++]) {
		case 1: /* a string: to the first quote after an even run of backslashes */
			for (;;) {
				const char *q = memchr(r->p, '"', (size_t)(r->end - r->p));
				if (!q)
					return jr_fail(r, "unexpected end of file");
				size_t k = 0;
				while (q - k > r->p && q[-1 - (ptrdiff_t)k] == '\\')
					k++;
				r->p = q + 1;
				if (k % 2 == 0)
					break;
			}
			break;
		case 2:
			if (++depth == 1) {
				jr_ws(r);
				empty = r->p < r->end && (*r->p == '}' || *r->p == ']');
			}
			break;
		case 3:
			depth--;
			break;
		case 4:
			commas += depth == 1;
			break;
		}
	} while (depth > 0);
	if (items)
		*items = empty ? 0 : commas + 1;
	return 0;
}

/* ---- the vocabulary as a hash table (only while loading) ---- */

struct vocab {
	struct ventry { const unsigned char *s; uint32_t len; int32_t id; } *slot;
	size_t mask;
};

/* FNV-1a, continued from h (so a pair hashes like its concatenation). */
static uint64_t fnv(uint64_t h, const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	return h;
}
#define FNV0 0xcbf29ce484222325ULL

/* The table is far bigger than the caches: loading looks up and inserts
 * ahead of time by this many entries (prefetching their slots), so that
 * memory latency overlaps instead of adding up. */
#define AHEAD 8

static inline void vocab_prefetch(const struct vocab *v, uint64_t h)
{
	__builtin_prefetch(&v->slot[h & v->mask]);
}

/* memcmp(a, b, n) == 0, inline: the strings are a few bytes long and
 * there are half a million comparisons. */
static inline int same(const unsigned char *a, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* The id of a ++ b (b may be empty), whose hash is h, or -1. */
static int32_t vocab_find(const struct vocab *v, uint64_t h, const unsigned char *a,
			  size_t na, const unsigned char *b, size_t nb)
{
	for (size_t i = h & v->mask;; i = (i + 1) & v->mask) {
		const struct ventry *s = &v->slot[i];
		if (!s->s)
			return -1;
		if (s->len == na + nb && same(s->s, a, na) && same(s->s + na, b, nb))
			return s->id;
	}
}

/* Adds s -> id (h: the hash of s); returns 1 if s was already there. */
static int vocab_add(struct vocab *v, uint64_t h, const unsigned char *s, size_t n, int32_t id)
{
	for (size_t i = h & v->mask;; i = (i + 1) & v->mask) {
		struct ventry *e = &v->slot[i];
		if (!e->s) {
			e->s = s;
			e->len = (uint32_t)n;
			e->id = id;
			return 0;
		}
		if (e->len == n && same(e->s, s, n))
			return 1;
	}
}

/* ---- loading ---- */

struct load {
	struct tokenizer *t;
	struct jr r;
	struct vocab v;
	size_t n_vocab, n_merges;          /* entries, counted while skipping */
	size_t vocab_bytes;                /* the vocabulary's strings, in all */
	const unsigned char **text;        /* by id: its text (vocab or added) */
	uint32_t *tlen;                    /* by id: its text's length */
	const char *vocab_at, *merges_at;  /* where the two arrays start */
	cJSON *added, *normalizer, *pretok, *post, *decoder;
	int32_t byte_cp[256];
	int16_t cp_byte[512];
};

/* Reads model.vocab (n_vocab entries, counted by the skip) into the hash
 * table and into text/tlen by id. */
static int parse_vocab(struct load *L)
{
	struct jr *r = &L->r;
	struct tokenizer *t = L->t;
	r->p = L->vocab_at;
	size_t cap = 1024, n = 0;
	while (cap < L->n_vocab + L->n_vocab / 2) /* at most 2/3 full */
		cap *= 2;
	struct pending { const unsigned char *s; size_t len; uint64_t h; int32_t id; } *pv;
	L->v.slot = calloc(cap, sizeof *L->v.slot);
	pv = malloc((L->n_vocab + 1) * sizeof *pv);
	if (!L->v.slot || !pv) {
		free(pv);
		return err_set(r->e, "out of memory");
	}
	L->v.mask = cap - 1;
	jr_expect(r, '{');
	if (jr_accept(r, '}')) {
		free(pv);
		return err_set(r->e, "model.vocab is empty");
	}
	do {
		struct pending *p = &pv[n];
		p->id = 0;
		if (n == L->n_vocab || jr_string(r, &p->s, &p->len) < 0 ||
		    jr_expect(r, ':') < 0 || jr_id(r, &p->id) < 0) {
			free(pv);
			return err_prefix(r->e, "model.vocab");
		}
		p->h = fnv(FNV0, p->s, p->len);
		L->vocab_bytes += p->len;
		if (p->id >= t->n_ids)
			t->n_ids = p->id + 1;
		n++;
	} while (jr_accept(r, ','));
	int rc = jr_expect(r, '}') < 0 ? err_prefix(r->e, "model.vocab") : 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (i + AHEAD < n)
			vocab_prefetch(&L->v, pv[i + AHEAD].h);
		if (vocab_add(&L->v, pv[i].h, pv[i].s, pv[i].len, pv[i].id)) {
			char q[128];
			rc = err_set(r->e, "model.vocab: %s appears twice",
				     quote_n(q, sizeof q, pv[i].s, pv[i].len));
		}
	}
	/* the tables by id: a stray huge id must not make them gigabytes */
	if (rc == 0 && (size_t)t->n_ids > 2 * (n + t->n_added))
		rc = err_set(r->e, "ids run to %d, but there are only %zu tokens "
			     "(at most half the ids may be unused)", t->n_ids - 1, n + t->n_added);
	if (rc < 0) {
		free(pv);
		return rc;
	}
	L->text = calloc((size_t)t->n_ids, sizeof *L->text);
	L->tlen = calloc((size_t)t->n_ids, sizeof *L->tlen);
	if (rc == 0 && (!L->text || !L->tlen))
		rc = err_set(r->e, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (L->text[pv[i].id])
			rc = err_set(r->e, "model.vocab: id %d appears twice", pv[i].id);
		L->text[pv[i].id] = pv[i].s;
		L->tlen[pv[i].id] = (uint32_t)pv[i].len;
	}
	free(pv);
	return rc;
}

/* One merge, "a b" or ["a", "b"]: the two parts. */
static int read_merge(struct jr *r, const unsigned char **a, size_t *na,
		      const unsigned char **b, size_t *nb)
{
	if (jr_accept(r, '[')) {
		if (jr_string(r, a, na) < 0 || jr_expect(r, ',') < 0 ||
		    jr_string(r, b, nb) < 0 || jr_expect(r, ']') < 0)
			return -1;
		return 0;
	}
	const unsigned char *s;
	size_t len;
	if (jr_string(r, &s, &len) < 0)
		return -1;
	const unsigned char *sp = memchr(s, ' ', len);
	if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
		return jr_fail(r, "a merge must be two tokens separated by one space");
	*a = s;
	*na = (size_t)(sp - s);
	*b = sp + 1;
	*nb = len - *na - 1;
	return 0;
}

/* Whether token id's text is a ++ b. */
static int text_is(const struct load *L, int32_t id, const unsigned char *a, size_t na,
		   const unsigned char *b, size_t nb)
{
	return id >= 0 && id < L->t->n_ids && L->text[id] && L->tlen[id] == na + nb &&
	       same(L->text[id], a, na) && same(L->text[id] + na, b, nb);
}

/* Reads model.merges and builds the BPE merge table. Each merge is
 * resolved to ids: its parts by hash lookup, its result first by guessing
 * the id after the previous result's (vocabularies trained by HuggingFace
 * list merge results in rank order, so this is almost always right, and it
 * is checked), else by lookup. */
static int parse_merges(struct load *L)
{
	struct jr *r = &L->r;
	r->p = L->merges_at;
	struct pending { const unsigned char *a, *b; size_t na, nb; uint64_t ha, hb; } *pm;
	struct bpe_merge *m;
	size_t n = 0;
	pm = malloc((L->n_merges + 1) * sizeof *pm);
	m = malloc((L->n_merges + 1) * sizeof *m);
	int rc = 0;
	if (!pm || !m) {
		rc = err_set(r->e, "out of memory");
		goto out;
	}
	jr_expect(r, '[');
	if (!jr_accept(r, ']')) {
		do {
			struct pending *p = &pm[n];
			if (n == L->n_merges || read_merge(r, &p->a, &p->na, &p->b, &p->nb) < 0) {
				rc = err_prefix(r->e, "model.merges");
				goto out;
			}
			p->ha = fnv(FNV0, p->a, p->na);
			p->hb = fnv(FNV0, p->b, p->nb);
			n++;
		} while (jr_accept(r, ','));
		if (jr_expect(r, ']') < 0) {
			rc = err_prefix(r->e, "model.merges");
			goto out;
		}
	}
	int32_t guess = -1;
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n) {
			vocab_prefetch(&L->v, pm[i + AHEAD].ha);
			vocab_prefetch(&L->v, pm[i + AHEAD].hb);
		}
		const struct pending *p = &pm[i];
		int32_t ia = vocab_find(&L->v, p->ha, p->a, p->na, NULL, 0);
		int32_t ib = vocab_find(&L->v, p->hb, p->b, p->nb, NULL, 0);
		int32_t iab = guess + 1;
		if (!text_is(L, iab, p->a, p->na, p->b, p->nb))
			iab = vocab_find(&L->v, fnv(p->ha, p->b, p->nb), p->a, p->na, p->b, p->nb);
		if (ia < 0 || ib < 0 || iab < 0) {
			char q[128];
			rc = err_set(r->e, "model.merges[%zu]: %s is not in the vocabulary", i,
				     quote_n(q, sizeof q, ia < 0 ? p->a : ib < 0 ? p->b : p->a,
					     ia < 0 ? p->na : ib < 0 ? p->nb : p->na + p->nb));
			goto out;
		}
		m[i] = (struct bpe_merge){ .left = ia, .right = ib, .merged = iab };
		guess = iab;
	}
	rc = bpe_init(&L->t->bpe, m, n, r->e);
out:
	free(pm);
	free(m);
	return rc;
}

/* Checks that cJSON value v (named name) is null, or a string equal to
 * want (NULL: any string), or a bool equal to want_bool (-1: any). */
static int check_scalar(cJSON *v, const char *name, const char *want_str, int want_bool,
			struct err *e)
{
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsBool(v) && want_bool >= 0 && cJSON_IsTrue(v) == want_bool)
		return 0;
	if (cJSON_IsBool(v) && want_bool == -1)
		return 0;
	if (cJSON_IsString(v) && want_str && strcmp(v->valuestring, want_str) == 0)
		return 0;
	char text[160];
	return err_set(e, "%s: %s is not supported", name, json_print_scalar(text, sizeof text, v));
}

/* Parses the JSON value at r->p with cJSON (moving past it). */
static cJSON *cjson_value(struct jr *r, const char *name)
{
	jr_ws(r);
	const char *at = r->p;
	if (jr_skip(r, NULL) < 0) {
		err_prefix(r->e, name);
		return NULL;
	}
	cJSON *v;
	if (json_parse_text(&v, at, (size_t)(r->p - at), name, r->e) < 0)
		return NULL;
	return v;
}

/* A model field other than vocab and merges: must be a supported value. */
static int model_field(struct load *L, const char *key)
{
	static const struct { const char *key, *str; int boolean; } ok[] = {
		{ "type", "BPE", -2 },
		{ "dropout", NULL, -2 },
		{ "unk_token", NULL, -2 },
		{ "continuing_subword_prefix", "", -2 },
		{ "end_of_word_suffix", "", -2 },
		{ "fuse_unk", NULL, -1 }, /* no unknown token: fusing them is moot */
		{ "byte_fallback", NULL, 0 },
		{ "ignore_merges", NULL, 0 },
	};
	char name[96];
	snprintf(name, sizeof name, "model.%s", key);
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		if (strcmp(key, ok[i].key) != 0)
			continue;
		cJSON *v = cjson_value(&L->r, name);
		if (!v)
			return -1;
		int rc = check_scalar(v, name, ok[i].str, ok[i].boolean, L->r.e);
		if (rc == 0 && i == 0 && !cJSON_IsString(v))
			rc = err_set(L->r.e, "model.type: missing");
		cJSON_Delete(v);
		return rc;
	}
	char q[128];
	return err_set(L->r.e, "model: %s: this field is not supported",
		       json_quote(q, sizeof q, key));
}

static int parse_model(struct load *L)
{
	struct jr *r = &L->r;
	int saw_type = 0;
	if (jr_expect(r, '{') < 0)
		return err_prefix(r->e, "model");
	if (!jr_accept(r, '}')) {
		do {
			const unsigned char *k;
			size_t kn;
			unsigned char *keep = r->out;
			if (jr_string(r, &k, &kn) < 0 || jr_expect(r, ':') < 0)
				return err_prefix(r->e, "model");
			char key[64];
			snprintf(key, sizeof key, "%.*s", (int)kn, k);
			r->out = keep;
			jr_ws(r);
			if (strcmp(key, "vocab") == 0 || strcmp(key, "merges") == 0) {
				int v = key[0] == 'v';
				*(v ? &L->vocab_at : &L->merges_at) = r->p;
				if (jr_skip(r, v ? &L->n_vocab : &L->n_merges) < 0)
					return err_prefix(r->e, key[0] == 'v' ? "model.vocab" : "model.merges");
				continue;
			}
			saw_type |= strcmp(key, "type") == 0;
			if (model_field(L, key) < 0)
				return -1;
		} while (jr_accept(r, ','));
		if (jr_expect(r, '}') < 0)
			return err_prefix(r->e, "model");
	}
	if (!saw_type)
		return err_set(r->e, "model.type: missing (only BPE is supported)");
	if (!L->vocab_at || !L->merges_at)
		return err_set(r->e, "model: %s missing", L->vocab_at ? "merges" : "vocab");
	return 0;
}

/* Whether component c is {"type": type}. */
static int is_type(const cJSON *c, const char *type)
{
	const cJSON *ty = cJSON_GetObjectItemCaseSensitive(c, "type");
	return cJSON_IsString(ty) && strcmp(ty->valuestring, type) == 0;
}

static int unsupported(struct err *e, const char *what, const cJSON *c)
{
	const cJSON *ty = cJSON_GetObjectItemCaseSensitive(c, "type");
	char q[128];
	return err_set(e, "%s: type %s is not supported", what,
		       cJSON_IsString(ty) ? json_quote(q, sizeof q, ty->valuestring) : "(none)");
}

/* A ByteLevel component: no prefix space; use_regex must be false inside a
 * Sequence after Split (when regex is true it splits with GPT-2's pattern
 * on its own, which we do not implement). */
static int check_bytelevel(const cJSON *c, const char *what, int need_no_regex, struct err *e)
{
	if (!is_type(c, "ByteLevel"))
		return unsupported(e, what, c);
	char name[96];
	snprintf(name, sizeof name, "%s.add_prefix_space", what);
	if (check_scalar(cJSON_GetObjectItemCaseSensitive(c, "add_prefix_space"), name, NULL, 0, e) < 0)
		return -1;
	snprintf(name, sizeof name, "%s.use_regex", what);
	if (need_no_regex &&
	    check_scalar(cJSON_GetObjectItemCaseSensitive(c, "use_regex"), name, NULL, 0, e) < 0)
		return -1;
	return 0;
}

static int check_pretok(const cJSON *c, struct err *e)
{
	if (!c || cJSON_IsNull(c))
		return err_set(e, "pre_tokenizer: none is not supported (byte-level BPE needs Split + ByteLevel)");
	if (!is_type(c, "Sequence"))
		return unsupported(e, "pre_tokenizer", c);
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(c, "pretokenizers");
	if (cJSON_GetArraySize(seq) != 2)
		return err_set(e, "pre_tokenizer: only Sequence[Split, ByteLevel] is supported");
	const cJSON *split = cJSON_GetArrayItem(seq, 0);
	if (!is_type(split, "Split"))
		return unsupported(e, "pre_tokenizer.pretokenizers[0]", split);
	const cJSON *pat = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(split, "pattern"), "Regex");
	if (!cJSON_IsString(pat) || strcmp(pat->valuestring, PRETOK_QWEN2_PATTERN) != 0)
		return err_set(e, "pre_tokenizer: this Split pattern is not supported "
			       "(only Qwen2's is implemented)");
	if (check_scalar(cJSON_GetObjectItemCaseSensitive(split, "behavior"),
			 "pre_tokenizer: Split behavior", "Isolated", -2, e) < 0 ||
	    check_scalar(cJSON_GetObjectItemCaseSensitive(split, "invert"),
			 "pre_tokenizer: Split invert", NULL, 0, e) < 0)
		return -1;
	return check_bytelevel(cJSON_GetArrayItem(seq, 1), "pre_tokenizer.pretokenizers[1]", 1, e);
}

/* Reads added_tokens into t->added (their contents decoded into
 * t->strings). */
static int load_added(struct load *L)
{
	struct tokenizer *t = L->t;
	struct err *e = L->r.e;
	const cJSON *a = L->added;
	if (a && !cJSON_IsArray(a))
		return err_set(e, "added_tokens: expected an array");
	size_t n = (size_t)cJSON_GetArraySize(a), bytes = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, a) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
		if (cJSON_IsString(c))
			bytes += strlen(c->valuestring);
	}
	t->added = calloc(n ? n : 1, sizeof *t->added);
	t->strings = malloc(bytes + 1);
	if (!t->added || !t->strings)
		return err_set(e, "out of memory");
	unsigned char *o = t->strings;
	size_t i = 0;
	cJSON_ArrayForEach(it, a) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "special");
		int64_t idv;
		if (!cJSON_IsString(c) || !c->valuestring[0] || json_integer(id, &idv) < 0 ||
		    idv < 0 || idv >= INT32_MAX - 1)
			return err_set(e, "added_tokens[%zu]: needs a content and a whole id", i);
		static const char *const off[] = { "single_word", "lstrip", "rstrip", "normalized" };
		for (size_t k = 0; k < 4; k++) {
			char name[160], q[128];
			snprintf(name, sizeof name, "added_tokens[%zu] %s: %s", i,
				 json_quote(q, sizeof q, c->valuestring), off[k]);
			if (check_scalar(cJSON_GetObjectItemCaseSensitive(it, off[k]), name, NULL, 0, e) < 0)
				return -1;
		}
		struct added *ad = &t->added[i++];
		ad->len = strlen(c->valuestring);
		memcpy(o, c->valuestring, ad->len);
		ad->text = o;
		o += ad->len;
		ad->id = (int32_t)idv;
		ad->special = cJSON_IsTrue(sp);
		t->first_byte[ad->text[0]] = 1;
		if (ad->id >= t->n_ids)
			t->n_ids = ad->id + 1;
	}
	t->n_added = n;
	return 0;
}

/* HuggingFace does not take an added token's id from the file: it gives
 * the token its vocabulary id if the model has it, else the next id after
 * the vocabulary (its number of entries) and the added tokens before it
 * (and warns when that differs from the file). A file where the two
 * disagree would encode differently here and there, so it is refused. */
static int check_added_ids(struct load *L)
{
	const struct tokenizer *t = L->t;
	int64_t max = -1; /* the largest id given so far */
	for (size_t i = 0; i < t->n_added; i++) {
		const struct added *a = &t->added[i];
		int64_t want = vocab_find(&L->v, fnv(FNV0, a->text, a->len), a->text, a->len, NULL, 0);
		for (size_t k = 0; want < 0 && k < i; k++)
			if (t->added[k].len == a->len && same(t->added[k].text, a->text, a->len))
				want = t->added[k].id;
		if (want < 0)
			want = max >= (int64_t)L->n_vocab ? max + 1 : (int64_t)L->n_vocab;
		if (want > max)
			max = want;
		if (want != a->id) {
			char q[128];
			return err_set(L->r.e, "added_tokens[%zu] %s: id %d, but HuggingFace would "
				       "give it %lld", i, quote_n(q, sizeof q, a->text, a->len), a->id,
				       (long long)want);
		}
	}
	return 0;
}

static int by_length_desc(const void *a, const void *b)
{
	const struct added *x = a, *y = b;
	return (x->len < y->len) - (x->len > y->len);
}

/* The bytes a token's text stands for: each character through the inverse
 * alphabet, or, when some character is outside it (an added token such as
 * "<|im_start|>" is inside it; "你好" would not be), the text itself. This
 * is HuggingFace's ByteLevel decoder, token by token. Writes to out (room
 * for n bytes); returns the count. */
static size_t token_bytes(const struct load *L, const unsigned char *s, size_t n,
			  unsigned char *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		int32_t cp;
		int len = utf8_decode(s + i, n - i, &cp);
		if (len == 0 || cp >= 512 || L->cp_byte[cp] < 0) {
			memcpy(out, s, n);
			return n;
		}
		out[k++] = (unsigned char)L->cp_byte[cp];
		i += (size_t)len;
	}
	return k;
}

/* Builds the per-id decoding table from the vocabulary and added tokens. */
static int build_decoder(struct load *L)
{
	struct tokenizer *t = L->t;
	/* every id's bytes are at most its text */
	size_t string_bytes = L->vocab_bytes;
	for (size_t i = 0; i < t->n_added; i++)
		string_bytes += t->added[i].len;
	t->off = calloc((size_t)t->n_ids + 1, sizeof *t->off);
	t->flags = calloc((size_t)t->n_ids, 1);
	t->bytes = malloc(string_bytes + 1);
	if (!t->off || !t->flags || !t->bytes)
		return err_set(L->r.e, "out of memory");
	const unsigned char **text = L->text;
	uint32_t *tlen = L->tlen;
	for (int32_t id = 0; id < t->n_ids; id++)
		if (text[id])
			t->flags[id] = F_EXISTS;
	for (size_t i = 0; i < t->n_added; i++) {
		const struct added *a = &t->added[i];
		/* an id may be both a vocabulary token and an added one only
		 * when the two are the same text */
		if (t->flags[a->id] && (tlen[a->id] != a->len ||
					memcmp(text[a->id], a->text, a->len) != 0)) {
			char qa[128], qb[128];
			return err_set(L->r.e, "added_tokens[%zu] %s: id %d is already %s", i,
				       quote_n(qa, sizeof qa, a->text, a->len), a->id,
				       quote_n(qb, sizeof qb, text[a->id], tlen[a->id]));
		}
		t->flags[a->id] = (unsigned char)(F_EXISTS | (a->special ? F_SPECIAL : 0));
		text[a->id] = a->text;
		tlen[a->id] = (uint32_t)a->len;
	}
	uint32_t at = 0;
	for (int32_t id = 0; id < t->n_ids; id++) {
		t->off[id] = at;
		if (text[id])
			at += (uint32_t)token_bytes(L, text[id], tlen[id], t->bytes + at);
	}
	t->off[t->n_ids] = at;
	return 0;
}

/* The token of each single byte: the vocabulary entry of its character. */
static int set_byte_tokens(struct load *L)
{
	for (int b = 0; b < 256; b++) {
		unsigned char ch[4];
		int n = utf8_encode(L->byte_cp[b], ch);
		int32_t id = vocab_find(&L->v, fnv(FNV0, ch, (size_t)n), ch, (size_t)n, NULL, 0);
		if (id < 0)
			return err_set(L->r.e, "model.vocab: no token for byte 0x%02x ('%.*s')",
				       b, n, ch);
		L->t->bpe.byte_id[b] = id;
	}
	return 0;
}

/* The top-level fields: the model, and the components checked by cJSON. */
static int parse_top(struct load *L)
{
	struct jr *r = &L->r;
	if (jr_expect(r, '{') < 0)
		return -1;
	if (jr_accept(r, '}'))
		return err_set(r->e, "model: missing");
	int saw_model = 0;
	do {
		const unsigned char *k;
		size_t kn;
		unsigned char *keep = r->out;
		if (jr_string(r, &k, &kn) < 0 || jr_expect(r, ':') < 0)
			return -1;
		char key[64];
		snprintf(key, sizeof key, "%.*s", (int)kn, k);
		r->out = keep;
		cJSON **slot = NULL;
		if (strcmp(key, "model") == 0) {
			if (parse_model(L) < 0)
				return -1;
			saw_model = 1;
			continue;
		} else if (strcmp(key, "added_tokens") == 0) {
			slot = &L->added;
		} else if (strcmp(key, "normalizer") == 0) {
			slot = &L->normalizer;
		} else if (strcmp(key, "pre_tokenizer") == 0) {
			slot = &L->pretok;
		} else if (strcmp(key, "post_processor") == 0) {
			slot = &L->post;
		} else if (strcmp(key, "decoder") == 0) {
			slot = &L->decoder;
		} else if (strcmp(key, "version") == 0) {
			if (jr_skip(r, NULL) < 0)
				return -1;
			continue;
		} else if (strcmp(key, "truncation") == 0 || strcmp(key, "padding") == 0) {
			cJSON *v = cjson_value(r, key);
			int rc = v ? check_scalar(v, key, NULL, -2, r->e) : -1;
			cJSON_Delete(v);
			if (rc < 0)
				return -1;
			continue;
		} else {
			char q[128];
			return err_set(r->e, "%s: this field is not supported",
				       quote_n(q, sizeof q, k, kn));
		}
		cJSON_Delete(*slot);
		if (!(*slot = cjson_value(r, key)))
			return -1;
	} while (jr_accept(r, ','));
	if (jr_expect(r, '}') < 0)
		return -1;
	jr_ws(r);
	if (r->p != r->end)
		return jr_fail(r, "trailing data after the JSON object");
	if (!saw_model)
		return err_set(r->e, "model: missing");
	return 0;
}

static int check_components(struct load *L)
{
	struct err *e = L->r.e;
	const cJSON *nz = L->normalizer;
	if (nz && !cJSON_IsNull(nz) && !is_type(nz, "NFC"))
		return unsupported(e, "normalizer", nz);
	L->t->nfc = nz && !cJSON_IsNull(nz);
	if (check_pretok(L->pretok, e) < 0)
		return -1;
	if (L->post && !cJSON_IsNull(L->post) &&
	    check_bytelevel(L->post, "post_processor", 0, e) < 0)
		return -1;
	if (!L->decoder || cJSON_IsNull(L->decoder))
		return err_set(e, "decoder: none is not supported (only ByteLevel)");
	return check_bytelevel(L->decoder, "decoder", 0, e);
}

struct tokenizer *tok_parse(const unsigned char *data, size_t size, const char *name,
			    struct err *e)
{
	struct tokenizer *t = calloc(1, sizeof *t);
	struct load L = { .t = t };
	unsigned char *strings = NULL;
	int rc = -1;
	if (!t || !(t->path = strdup(name)) || !(strings = malloc(size + 1))) {
		err_set(e, "out of memory");
		goto out;
	}
	alphabet(L.byte_cp, L.cp_byte);
	L.r = (struct jr){ .start = (const char *)data, .p = (const char *)data,
			   .end = (const char *)data + size, .e = e, .out = strings };
	if (!size) {
		err_set(e, "empty file");
		goto prefix;
	}
	/* The whole text is strict JSON first (the one validator,
	 * lib/core/jsonutil.h); the reader below then takes what it uses. */
	if (json_validate((const char *)data, size, NULL, e) < 0)
		goto prefix;
	if (parse_top(&L) < 0 || check_components(&L) < 0 || load_added(&L) < 0 ||
	    parse_vocab(&L) < 0 || check_added_ids(&L) < 0 || parse_merges(&L) < 0 ||
	    set_byte_tokens(&L) < 0 ||
	    build_decoder(&L) < 0)
		goto prefix;
	qsort(t->added, t->n_added, sizeof *t->added, by_length_desc);
	rc = 0;
	goto out;
prefix:
	err_prefix(e, t->path);
out:
	free(L.v.slot);
	free(L.text);
	free(L.tlen);
	free(strings);
	cJSON_Delete(L.added);
	cJSON_Delete(L.normalizer);
	cJSON_Delete(L.pretok);
	cJSON_Delete(L.post);
	cJSON_Delete(L.decoder);
	if (rc < 0) {
		tok_free(t);
		return NULL;
	}
	return t;
}

struct tokenizer *tok_load(const char *path, struct err *e)
{
	struct mapfile m;
	struct tokenizer *t = NULL;
	if (mapfile_open(&m, path, e) == 0) {
		t = tok_parse(m.data, m.size, path, e);
		mapfile_close(&m);
	}
	return t;
}

void tok_free(struct tokenizer *t)
{
	if (!t)
		return;
	bpe_free(&t->bpe);
	free(t->path);
	free(t->off);
	free(t->bytes);
	free(t->flags);
	free(t->added);
	free(t->strings);
	free(t->norm);
	free(t);
}

const char *tok_path(const struct tokenizer *t)
{
	return t->path;
}

int32_t tok_n_ids(const struct tokenizer *t)
{
	return t->n_ids;
}

const unsigned char *tok_bytes(const struct tokenizer *t, int32_t id, size_t *len)
{
	if (id < 0 || id >= t->n_ids || !(t->flags[id] & F_EXISTS))
		return NULL;
	*len = t->off[id + 1] - t->off[id];
	return t->bytes + t->off[id];
}

int tok_is_special(const struct tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_ids && (t->flags[id] & F_SPECIAL);
}

/* ---- encoding ---- */

/* The next added token in s[from..n): its start (*at) and entry, or NULL. */
static const struct added *next_added(const struct tokenizer *t, const unsigned char *s,
				      size_t n, size_t from, int flags, size_t *at)
{
	for (size_t i = from; i < n; i++) {
		if (!t->first_byte[s[i]])
			continue;
		for (size_t k = 0; k < t->n_added; k++) { /* longest first */
			const struct added *a = &t->added[k];
			if (a->len <= n - i && memcmp(s + i, a->text, a->len) == 0 &&
			    !(a->special && (flags & TOK_NO_SPECIAL))) {
				*at = i;
				return a;
			}
		}
	}
	return NULL;
}

static int grow_norm(struct tokenizer *t, size_t need)
{
	if (need <= t->norm_cap)
		return 0;
	size_t cap = t->norm_cap ? t->norm_cap : 4096;
	while (cap < need)
		cap *= 2;
	unsigned char *p = realloc(t->norm, cap);
	if (!p)
		return -1;
	t->norm = p;
	t->norm_cap = cap;
	return 0;
}

/* NFC of s[0..n) into t->norm (*out_n bytes). Runs of valid UTF-8 are
 * normalized each on its own; invalid bytes are copied and counted. Text
 * with no byte from 0xCC up (all code points below U+0300: starters that
 * NFC leaves as they are, none of which composes with what precedes it;
 * tests/c/test_tokenizer.c checks this over all of Unicode) is already
 * NFC. */
static int normalize(struct tokenizer *t, const unsigned char *s, size_t n,
		     size_t *out_n, size_t *n_invalid, struct err *e)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int high = 0;
		while (j < n) {
			int32_t cp;
			int len = s[j] < 0x80 ? 1 : utf8_decode(s + j, n - j, &cp);
			if (len == 0)
				break;
			high |= s[j] >= 0xCC;
			j += (size_t)len;
		}
		if (j > i) {
			utf8proc_uint8_t *nf = NULL;
			const unsigned char *src = s + i;
			size_t len = j - i;
			if (high && t->nfc) {
				utf8proc_ssize_t r = utf8proc_map(s + i, (utf8proc_ssize_t)(j - i), &nf,
								  UTF8PROC_STABLE | UTF8PROC_COMPOSE);
				if (r < 0)
					return err_set(e, "NFC: %s", utf8proc_errmsg(r));
				src = nf;
				len = (size_t)r;
			}
			if (grow_norm(t, o + len + 1) < 0) {
				free(nf);
				return err_set(e, "out of memory");
			}
			memcpy(t->norm + o, src, len);
			o += len;
			free(nf);
		}
		if (j < n) { /* one invalid byte */
			if (grow_norm(t, o + 1) < 0)
				return err_set(e, "out of memory");
			t->norm[o++] = s[j++];
			++*n_invalid;
		}
		i = j;
	}
	*out_n = o;
	return 0;
}

/* A stretch of text between added tokens: normalize, split, merge. */
static int encode_text(struct tokenizer *t, const unsigned char *s, size_t n,
		       struct idvec *out, size_t *n_invalid, struct err *e)
{
	size_t len = 0;
	if (normalize(t, s, n, &len, n_invalid, e) < 0)
		return -1;
	for (size_t i = 0; i < len;) {
		size_t j = pretok_next(t->norm, len, i);
		if (bpe_encode(&t->bpe, t->norm + i, j - i, out, e) < 0)
			return -1;
		i = j;
	}
	return 0;
}

int tok_encode(struct tokenizer *t, const unsigned char *s, size_t n, int flags,
	       struct idvec *out, size_t *n_invalid, struct err *e)
{
	size_t bad = 0, pos = 0;
	while (pos < n) {
		size_t at = n;
		const struct added *a = next_added(t, s, n, pos, flags, &at);
		if (at > pos && encode_text(t, s + pos, at - pos, out, &bad, e) < 0)
			return -1;
		if (!a)
			break;
		if (idvec_push(out, a->id) < 0)
			return err_set(e, "out of memory");
		pos = at + a->len;
	}
	if (n_invalid)
		*n_invalid = bad;
	return 0;
}
