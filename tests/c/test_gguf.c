/* The GGUF reader and the dequantizers against what llama.cpp's own reader
 * (gguf-py, an independent implementation) read in llama.cpp's files:
 * tests/golden/gguf/ (the .json files) give per file the version, alignment, data
 * offset and metadata, and per tensor its type, ne, offset, bytes and the
 * SHA-256 of its values dequantized to float32 little-endian. Matching the
 * digest of every tensor means our dequantization is bit for bit theirs.
 * Small in-memory images check the refusals one at a time. */
#include "check.h"
#include "sha256.h"
#include "format/gguf.h"
#include "format/gguf_arch.h"
#include "text/tokenizer.h"
#include "core/cpu.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/gguf_export.h"
#include "core/mapfile.h"

#include <cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GG "tests/golden/gguf/"

static cJSON *load_json(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = 0;
	return cJSON_Parse(buf);
}

static void test_sha256(void)
{
	struct sha256 s;
	char hex[65];
	sha256_init(&s);
	sha256_update(&s, "abc", 3);
	sha256_hex(&s, hex);
	CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
	      "sha256(abc) is FIPS 180-4's vector, got %s", hex);
}

/* One llama.cpp file against its .json: header, metadata scalars, every
 * tensor's place and values. */
static void test_file(const char *gguf, const char *json)
{
	cJSON *j = load_json(json);
	CHECK(j != NULL, "%s parses", json);
	if (!j)
		return;
	struct gguf_file f;
	struct err e;
	int rc = gguf_open(&f, gguf, &e);
	CHECK(rc == 0, "open %s: %s", gguf, rc ? e.msg : "");
	if (rc) {
		cJSON_Delete(j);
		return;
	}
	CHECK(f.version == (uint32_t)cJSON_GetObjectItem(j, "version")->valuedouble, "version");
	CHECK(f.alignment == (uint64_t)cJSON_GetObjectItem(j, "alignment")->valuedouble,
	      "alignment");
	CHECK(f.data_offset == (uint64_t)cJSON_GetObjectItem(j, "data_offset")->valuedouble,
	      "%s: data offset %llu", gguf, (unsigned long long)f.data_offset);
	CHECK(f.size == (size_t)cJSON_GetObjectItem(j, "bytes")->valuedouble, "size");

	/* metadata: every key (but gguf-py's GGUF.* pseudo-keys) is there, with
	 * the same value where the .json gives it in full */
	const cJSON *meta = cJSON_GetObjectItem(j, "metadata");
	int nkeys = 0;
	for (const cJSON *m = meta->child; m; m = m->next) {
		if (strncmp(m->string, "GGUF.", 5) == 0)
			continue;
		nkeys++;
		const struct gguf_kv *kv = gguf_find_kv(&f, m->string);
		CHECK(kv != NULL, "%s: key %s", gguf, m->string);
		if (!kv)
			continue;
		if (cJSON_IsNumber(m) && kv->type != GGUF_ARRAY)
			CHECK(kv->type == GGUF_F32 || kv->type == GGUF_F64 ?
			      kv->f == m->valuedouble : (double)kv->i == m->valuedouble,
			      "%s: %s = %.17g", gguf, m->string, m->valuedouble);
		else if (cJSON_IsBool(m))
			CHECK(kv->type == GGUF_BOOL && kv->u == (uint64_t)cJSON_IsTrue(m),
			      "%s: %s", gguf, m->string);
		else if (cJSON_IsString(m) && strncmp(m->valuestring, "array of ", 9) == 0)
			CHECK(kv->type == GGUF_ARRAY &&
			      kv->n == strtoull(m->valuestring + 9, NULL, 10), "%s: %s: %s",
			      gguf, m->string, m->valuestring);
		else if (cJSON_IsString(m) && strncmp(m->valuestring, "string of ", 10) == 0)
			CHECK(kv->type == GGUF_STRING &&
			      kv->slen == strtoull(m->valuestring + 10, NULL, 10), "%s: %s",
			      gguf, m->string);
		else if (cJSON_IsString(m))
			CHECK(kv->type == GGUF_STRING && kv->slen == strlen(m->valuestring) &&
			      memcmp(kv->s, m->valuestring, kv->slen) == 0, "%s: %s", gguf,
			      m->string);
	}
	CHECK(nkeys == f.nkv, "%s: %d keys, the .json has %d", gguf, f.nkv, nkeys);

	const cJSON *ts = cJSON_GetObjectItem(j, "tensors");
	CHECK(cJSON_GetArraySize(ts) == f.ntensors, "%s: tensor count", gguf);
	int exact = 0, n = 0;
	for (const cJSON *t = ts->child; t; t = t->next, n++) {
		const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
		const struct gguf_tensor *g = gguf_find_tensor(&f, name);
		CHECK(g != NULL, "%s: tensor %s", gguf, name);
		if (!g)
			continue;
		const cJSON *ne = cJSON_GetObjectItem(t, "ne");
		int ok = g->ndim == cJSON_GetArraySize(ne);
		for (int d = 0; ok && d < g->ndim; d++)
			ok = g->ne[d] == (int64_t)cJSON_GetArrayItem(ne, d)->valuedouble;
		CHECK(ok, "%s: %s: ne", gguf, name);
		CHECK(strcmp(gguf_ttype_name(g->type),
			     cJSON_GetObjectItem(t, "type")->valuestring) == 0,
		      "%s: %s: type %s", gguf, name, gguf_ttype_name(g->type));
		CHECK(f.data_offset + g->offset ==
		      (uint64_t)cJSON_GetObjectItem(t, "offset")->valuedouble &&
		      g->bytes == (uint64_t)cJSON_GetObjectItem(t, "n_bytes")->valuedouble,
		      "%s: %s: offset and bytes", gguf, name);
		float *v = malloc(sizeof(float) * g->nelem);
		if (!v || gguf_dequant(g->type, g->data, g->nelem, v) < 0) {
			CHECK(0, "%s: %s: dequantize", gguf, name);
			free(v);
			continue;
		}
		struct sha256 s;
		char hex[65];
		sha256_init(&s);
		sha256_update(&s, v, sizeof(float) * g->nelem);
		sha256_hex(&s, hex);
		const char *want = cJSON_GetObjectItem(t, "sha256_f32")->valuestring;
		CHECK(strcmp(hex, want) == 0, "%s: %s (%s): values' SHA-256 %s, llama.cpp's %s",
		      gguf, name, gguf_ttype_name(g->type), hex, want);
		exact += strcmp(hex, want) == 0;
		free(v);
	}
	printf("%s: %d of %d tensors dequantized bit for bit\n", gguf, exact, n);
	gguf_close(&f);
	cJSON_Delete(j);
}

/* ---- closed forms for the types llama.cpp's files here do not use ---- */

static uint16_t f16_of(float x)  /* exact for the small dyadic values used */
{
	uint32_t u;
	memcpy(&u, &x, 4);
	if (x == 0)
		return 0;
	int ex = (int)((u >> 23) & 255) - 127 + 15;
	return (uint16_t)((u >> 16 & 0x8000) | (uint32_t)ex << 10 | (u >> 13 & 0x3ff));
}

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

/* Q4_1 and Q5_1 blocks from chosen quants: x = d * q + m with d, m powers
 * of two and small q, so every value is exact and the order of operations
 * cannot matter. */
static void test_q4_1_q5_1(void)
{
	unsigned char b4[20] = { 0 }, b5[24] = { 0 };
	float want4[32], want5[32], got[32];
	float d = 0.125f, m = -1.0f;
	put16(b4, f16_of(d));
	put16(b4 + 2, f16_of(m));
	put16(b5, f16_of(d));
	put16(b5 + 2, f16_of(m));
	uint32_t qh = 0;
	for (int i = 0; i < 32; i++) {
		int q4 = (i * 7) % 16, q5 = (i * 11) % 32;
		int j = i % 16;
		b4[4 + j] |= (unsigned char)(i < 16 ? q4 : q4 << 4);
		b5[8 + j] |= (unsigned char)(i < 16 ? (q5 & 15) : (q5 & 15) << 4);
		qh |= (uint32_t)(q5 >> 4) << i;  /* element i's fifth bit is bit i */
		want4[i] = d * (float)q4 + m;
		want5[i] = d * (float)q5 + m;
	}
	for (int k = 0; k < 4; k++)
		b5[4 + k] = (unsigned char)(qh >> (8 * k));
	CHECK(gguf_dequant(GGML_Q4_1, b4, 32, got) == 0 && memcmp(got, want4, sizeof got) == 0,
	      "Q4_1: d * q + m");
	CHECK(gguf_dequant(GGML_Q5_1, b5, 32, got) == 0 && memcmp(got, want5, sizeof got) == 0,
	      "Q5_1: d * q + m, the fifth bit from qh");
}

/* A Q5_K block: eight sub-blocks of 32 with 6-bit scales and mins packed as
 * ggml documents (sub-blocks 0-3 in the low 6 bits of bytes 0-3 and 4-7;
 * 4-7 in the nibbles of bytes 8-11 and the top 2 bits of 0-3 and 4-7). */
static void test_q5_k(void)
{
	unsigned char b[176] = { 0 };
	float want[256], got[256];
	float d = 0.0625f, dmin = 0.03125f;
	put16(b, f16_of(d));
	put16(b + 2, f16_of(dmin));
	int sc[8] = { 1, 63, 17, 40, 5, 62, 33, 48 }, mn[8] = { 0, 9, 63, 20, 61, 3, 44, 16 };
	unsigned char *s = b + 4, *qh = b + 16, *qs = b + 48;
	for (int j = 0; j < 8; j++) {
		if (j < 4) {
			s[j] |= (unsigned char)sc[j];
			s[j + 4] |= (unsigned char)mn[j];
		} else {
			s[j + 4] = (unsigned char)((sc[j] & 15) | (mn[j] & 15) << 4);
			s[j - 4] |= (unsigned char)((sc[j] >> 4) << 6);
			s[j] |= (unsigned char)((mn[j] >> 4) << 6);
		}
		for (int l = 0; l < 32; l++) {
			int q = (j * 13 + l * 5) % 32;
			qs[32 * (j / 2) + l] |= (unsigned char)((q & 15) << (4 * (j % 2)));
			qh[l] |= (unsigned char)((q >> 4) << j);
			want[32 * j + l] = d * (float)sc[j] * (float)q - dmin * (float)mn[j];
		}
	}
	CHECK(gguf_dequant(GGML_Q5_K, b, 256, got) == 0 && memcmp(got, want, sizeof got) == 0,
	      "Q5_K: (d * sc) * q - dmin * m per sub-block");
}

/* ---- refusals: a deterministic mutation fuzzer over a small image ---- */

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A valid image: a STRING key, an array of strings, an INT32 array, a
 * FLOAT32, a BOOL, and two tensors (F32 [8], Q8_0 [32]), data at 32-byte
 * alignment. */
static size_t seed_image(unsigned char *buf)
{
	size_t n = 0;
#define PUT(v, k) do { uint64_t x_ = (v); for (int i_ = 0; i_ < (k); i_++) buf[n++] = (unsigned char)(x_ >> (8 * i_)); } while (0)
#define STR(s) do { PUT(strlen(s), 8); memcpy(buf + n, s, strlen(s)); n += strlen(s); } while (0)
	memcpy(buf, "GGUF", 4);
	n = 4;
	PUT(3, 4); PUT(2, 8); PUT(5, 8);
	STR("general.architecture"); PUT(GGUF_STRING, 4); STR("qwen2");
	STR("tokenizer.ggml.tokens"); PUT(GGUF_ARRAY, 4); PUT(GGUF_STRING, 4); PUT(2, 8);
	STR("a"); STR("bc");
	STR("tokenizer.ggml.token_type"); PUT(GGUF_ARRAY, 4); PUT(GGUF_I32, 4); PUT(2, 8);
	PUT(1, 4); PUT(3, 4);
	STR("qwen2.rope.freq_base"); PUT(GGUF_F32, 4); PUT(0x49742400, 4);
	STR("tokenizer.ggml.add_bos_token"); PUT(GGUF_BOOL, 4); PUT(0, 1);
	STR("a"); PUT(1, 4); PUT(8, 8); PUT(GGML_F32, 4); PUT(0, 8);
	STR("b"); PUT(1, 4); PUT(32, 8); PUT(GGML_Q8_0, 4); PUT(32, 8);
	while (n % 32)
		buf[n++] = 0;
	memset(buf + n, 0, 32 + 34);
	n += 32 + 34;
#undef PUT
#undef STR
	return n;
}

static void test_mutations(void)
{
	unsigned char seed[1024], buf[1024];
	size_t n0 = seed_image(seed);
	struct gguf_file f;
	struct err e;
	CHECK(gguf_parse(&f, seed, n0, "seed.gguf", &e) == 0 && f.ntensors == 2 && f.nkv == 5,
	      "the seed image parses: %s", e.msg);
	gguf_close(&f);
	int accepted = 0, refused = 0, bad = 0;
	for (int round = 0; round < 100000; round++) {
		size_t n = n0;
		memcpy(buf, seed, n);
		for (int k = 1 + (int)(rnd() % 3); k > 0 && n > 0; k--) {
			size_t at = rnd() % n;
			switch (rnd() % 4) {
			case 0: buf[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
			case 1: buf[at] = (unsigned char)"\0\1\x20\x7f\x80\xff"[rnd() % 6]; break;
			case 2: n = at; break;  /* cut */
			default: buf[at] = (unsigned char)rnd(); break;
			}
		}
		unsigned char *copy = malloc(n ? n : 1);  /* exact size: ASan sees overreads */
		memcpy(copy, buf, n);
		if (gguf_parse(&f, copy, n, "m.gguf", &e) < 0) {
			refused++;
			bad += strncmp(e.msg, "m.gguf: ", 8) != 0 || strchr(e.msg, '\n') != NULL;
		} else {
			accepted++;
			for (int i = 0; i < f.ntensors; i++)
				bad += (const unsigned char *)f.t[i].data + f.t[i].bytes > copy + n;
			gguf_close(&f);
		}
		free(copy);
	}
	CHECK(bad == 0, "mutations: %d refusals without the file's name or with a newline, "
	      "or views outside the buffer", bad);
	printf("mutations: %d accepted, %d refused\n", accepted, refused);
}

/* ---- the tokenizer from the file's arrays ---- */

/* The tokenizer built from llama.cpp's arrays against HuggingFace's ids on
 * the whole tokenizer corpus (tests/golden/tokenizer/corpus.jsonl, which
 * tests/c/test_tokenizer.c holds the tokenizer.json path to), and id by id
 * against the bundled tokenizer.json: the same bytes for every id, nothing
 * for llama.cpp's [PAD] ids, and special exactly where llama.cpp's
 * converter marked the token CONTROL (the eight fim/repo tokens included,
 * which HuggingFace calls not special). */
static void test_tokenizer(void)
{
	struct gguf_file f;
	struct bpe_vocab v;
	struct err e;
	const char *path = GG "shakespeare-tiny.q4_0.gguf";
	struct tokenizer *g = NULL;
	if (gguf_open(&f, path, &e) == 0) {
		if (gguf_vocab(&f, path, &v, &e) == 0) {
			g = tok_from_vocab(&v, path, &e);
			bpe_vocab_free(&v);
		}
		gguf_close(&f);
	}
	struct tokenizer *j = tok_load("data/qwen2.5-0.5b-instruct/tokenizer.json", &e);
	CHECK(g && j, "both tokenizers load: %s", e.msg);
	if (!g || !j) {
		tok_free(g);
		tok_free(j);
		return;
	}
	CHECK(tok_n_ids(g) == tok_n_ids(j), "ids: %d and %d", tok_n_ids(g), tok_n_ids(j));
	int same = 1, special = 0;
	for (int32_t id = 0; id < 151936; id++) {
		size_t na = 0, nb = 0;
		const unsigned char *a = tok_bytes(g, id, &na), *b = tok_bytes(j, id, &nb);
		same &= (!a && !b) || (a && b && na == nb && memcmp(a, b, na) == 0);
		special += tok_is_special(g, id);
	}
	CHECK(same, "every id has the same bytes (or none) in both");
	CHECK(special == 20, "20 CONTROL tokens are special, got %d", special);

	FILE *fp = fopen("tests/golden/tokenizer/corpus.jsonl", "rb");
	CHECK(fp != NULL, "corpus");
	char *line = NULL;
	size_t cap = 0;
	long n = 0, ok = 0;
	struct idvec got = { 0 };
	while (fp && getline(&line, &cap, fp) > 0) {
		cJSON *r = cJSON_Parse(line);
		const cJSON *text = cJSON_GetObjectItem(r, "text"), *ids = cJSON_GetObjectItem(r, "ids");
		got.n = 0;
		int eq = cJSON_IsString(text) &&
			 tok_encode(g, (const unsigned char *)text->valuestring,
				    strlen(text->valuestring), 0, &got, NULL, &e) == 0 &&
			 got.n == (size_t)cJSON_GetArraySize(ids);
		size_t k = 0;
		for (const cJSON *it = ids ? ids->child : NULL; eq && it; it = it->next, k++)
			eq = got.v[k] == (int32_t)it->valuedouble;
		ok += eq;
		n++;
		cJSON_Delete(r);
	}
	free(line);
	idvec_free(&got);
	if (fp)
		fclose(fp);
	CHECK(n > 10000 && ok == n, "corpus: %ld of %ld strings encode to HuggingFace's ids", ok, n);
	tok_free(g);
	tok_free(j);
}

/* ---- the model from the file alone ---- */

#define TINY_CASES 4
static const char *const cases[TINY_CASES] = { "citizen", "richard", "chatml", "mixed" };

struct logits {
	int V;
	float *all;   /* every position's logits */
	float *last;
};

static int keep(void *arg, int pos, const float *lg, struct err *e)
{
	struct logits *r = arg;
	memcpy(r->last, lg, sizeof(float) * r->V);
	if (r->all)
		memcpy(r->all + (size_t)pos * r->V, lg, sizeof(float) * r->V);
	return 0;
}

/* The logits of every position of ids[0..n) into all, then 48 greedy
 * tokens (argmax, the first on ties) into greedy. */
static void run(const struct model *m, const int *ids, int n, float *all, int *greedy)
{
	struct forward f;
	struct forward_opts o = { .threads = 1, .ctx = n + 64, .level = cpu_detect() };
	struct err e;
	struct logits r = { m->cfg.vocab_size, all, malloc(sizeof(float) * m->cfg.vocab_size) };
	CHECK(forward_init(&f, m, &o, &e) == 0 && forward_eval(&f, ids, n, 1, keep, &r, &e) == 0,
	      "eval: %s", e.msg);
	r.all = NULL;
	for (int i = 0; i < 48; i++) {
		int a = 0;
		for (int k = 1; k < r.V; k++)
			a = r.last[k] > r.last[a] ? k : a;
		greedy[i] = a;
		CHECK(forward_eval(&f, &greedy[i], 1, 0, keep, &r, &e) == 0, "eval: %s", e.msg);
	}
	free(r.last);
	forward_free(&f);
}

/* Case c run through two models: every position's logits (la, lb) and
 * the 48 greedy tokens after the prompt (ga, gb); j is the case. */
struct pair {
	cJSON *j;
	int n;
	size_t V;
	float *la, *lb;
	int ga[48], gb[48];
};

static void run_pair(const struct model *a, const struct model *b, int c, struct pair *p)
{
	char path[128];
	snprintf(path, sizeof path, "tests/golden/shakespeare-tiny/%s.json", cases[c]);
	p->j = load_json(path);
	const cJSON *ids = cJSON_GetObjectItem(p->j, "ids");
	p->n = cJSON_GetArraySize(ids);
	p->V = (size_t)a->cfg.vocab_size;
	int *id = malloc(sizeof(int) * (size_t)p->n);
	for (int i = 0; i < p->n; i++)
		id[i] = cJSON_GetArrayItem(ids, i)->valueint;
	p->la = malloc(sizeof(float) * p->V * (size_t)p->n);
	p->lb = malloc(sizeof(float) * p->V * (size_t)p->n);
	run(a, id, p->n, p->la, p->ga);
	run(b, id, p->n, p->lb, p->gb);
	free(id);
}

static void pair_free(struct pair *p)
{
	free(p->la);
	free(p->lb);
	cJSON_Delete(p->j);
}

static int load_ok(struct model *m, const char *path, int f32)
{
	struct model_opts o = { .f32 = f32 };
	struct err e;
	int rc = model_load(m, path, &o, &e);
	CHECK(rc == 0, "load %s: %s", path, rc ? e.msg : "");
	return rc;
}

/* llama.cpp's bf16 file is the bundled safetensors model bit for bit, so
 * its logits are the same bits (same kernels, same weights), and its greedy
 * tokens are transformers' (tests/golden/shakespeare-tiny/: greedy_48). */
static void test_bf16_model(void)
{
	struct model a, b;
	if (load_ok(&a, "data/shakespeare-tiny", 0) || load_ok(&b, GG "shakespeare-tiny.bf16.gguf", 0))
		return;
	CHECK(b.w.layers[0].wq.type == WT_BF16 && b.w.embed.type == WT_BF16, "bf16 matrices as stored");
	for (int c = 0; c < TINY_CASES; c++) {
		struct pair p;
		run_pair(&a, &b, c, &p);
		CHECK(memcmp(p.la, p.lb, sizeof(float) * p.V * (size_t)p.n) == 0,
		      "%s: every position's logits are the safetensors model's, bitwise", cases[c]);
		const cJSON *g48 = cJSON_GetObjectItem(p.j, "greedy_48");
		int same = cJSON_GetArraySize(g48) == 48;
		for (int i = 0; same && i < 48; i++)
			same = p.gb[i] == cJSON_GetArrayItem(g48, i)->valueint;
		CHECK(same, "%s: the 48 greedy tokens are transformers'", cases[c]);
		pair_free(&p);
	}
	model_free(&a);
	model_free(&b);
}

/* A quantized file as loaded (Q4_0 repacked for the int4 kernels, Q8_0 for
 * the int8 ones with a scale per 32 weights, Q4_K, Q5_K and Q6_K for the
 * K-quant kernels, the rest dequantized) against the float32 model of the same file's exactly
 * dequantized values (--f32): the same function but for the kernels' sum
 * orders, so within 1e-4 at every position (the project's bound for
 * reordered float32 sums at logits of about 10). */
static int is_q8_0(const struct wmat *w)
{
	return w->type == WT_Q8 && w->group_size == 32;
}

/* Whether every row of w (as loaded) dequantizes to the bits of
 * the same row of the float32 model's f (the file's values, gguf_dequant). */
static int same_rows(const struct wmat *w, const struct wmat *f)
{
	float *a = malloc(sizeof(float) * (size_t)w->cols), *b = malloc(sizeof(float) * (size_t)w->cols);
	int same = 1;
	for (int r = 0; r < w->rows && same; r++) {
		kern_row(w, r, a);
		kern_row(f, r, b);
		same = memcmp(a, b, sizeof(float) * (size_t)w->cols) == 0;
	}
	free(a);
	free(b);
	return same;
}

static void test_quant_model(const char *file, int want_q4, int want_q8, int want_q5,
			     int want_kq, int want_iq4)
{
	struct model q, f;
	if (load_ok(&q, file, 0) || load_ok(&f, file, 1))
		return;
	int q4 = 0, q8 = is_q8_0(&q.w.embed), q5 = wt_is_q5(q.w.embed.type), kq = 0,
	    iq4 = q.w.embed.type == WT_IQ4;
	for (int l = 0; l < q.cfg.n_layers; l++) {
		const struct layer_weights *L = &q.w.layers[l];
		q4 += (L->wq.type == WT_Q4) + (L->down.type == WT_Q4);
		q8 += is_q8_0(&L->wq) + is_q8_0(&L->wk) + is_q8_0(&L->wv) + is_q8_0(&L->wo) +
		      is_q8_0(&L->gate) + is_q8_0(&L->up) + is_q8_0(&L->down);
		kq += kq_is(L->down.type);
		const struct layer_weights *F = &f.w.layers[l];
		const struct wmat *a[] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down };
		const struct wmat *b[] = { &F->wq, &F->wk, &F->wv, &F->wo, &F->gate, &F->up, &F->down };
		for (int i = 0; i < 7; i++) {
			q5 += wt_is_q5(a[i]->type);
			iq4 += a[i]->type == WT_IQ4;
		}
		for (int i = 0; i < 7; i++)
			CHECK(same_rows(a[i], b[i]), "%s: layer %d, matrix %d: the repacked codes "
			      "hold the file's values exactly", file, l, i);
	}
	CHECK(kq == want_kq, "%s: %d down matrices run on the K-quant kernels, expected %d",
	      file, kq, want_kq);
	CHECK(q4 == want_q4, "%s: %d of the q and down matrices run on the int4 kernels, "
	      "expected %d", file, q4, want_q4);
	CHECK(q8 == want_q8, "%s: %d matrices run on the int8 kernels in groups of 32, "
	      "expected %d (the file's Q8_0 ones)", file, q8, want_q8);
	CHECK(q5 == want_q5, "%s: %d matrices run in 5-bit tiles, expected %d (the file's "
	      "Q5_0 ones)", file, q5, want_q5);
	CHECK(iq4 == want_iq4, "%s: %d matrices run in 4-bit IQ4 tiles, expected %d (the "
	      "file's IQ4_NL and IQ4_XS ones)", file, iq4, want_iq4);
	CHECK(f.w.layers[0].wq.type == WT_F32, "--f32: float32 matrices");
	double worst = 0;
	for (int c = 0; c < TINY_CASES; c++) {
		struct pair p;
		run_pair(&q, &f, c, &p);
		double d = check_max_abs(p.la, p.lb, (long)(p.V * (size_t)p.n), NULL);
		worst = d > worst ? d : worst;
		CHECK(d <= 1e-4, "%s: %s: logits within 1e-4 of the float32 model of its values "
		      "(%.3g)", file, cases[c], d);
		pair_free(&p);
	}
	printf("%s: logits within %.3g of its float32 model\n", file, worst);
	model_free(&q);
	model_free(&f);
}

/* ---- writing ---- */

/* The SHA-256 of tensor name's dequantized values in the file at path
 * into hex (or "" when it cannot be read), and its type name. */
static const char *tensor_sha(const struct gguf_file *f, const char *name, char hex[65])
{
	const struct gguf_tensor *t = gguf_find_tensor(f, name);
	hex[0] = 0;
	if (!t)
		return "";
	float *v = malloc(sizeof(float) * t->nelem);
	if (v && gguf_dequant(t->type, t->data, t->nelem, v) == 0) {
		struct sha256 s;
		sha256_init(&s);
		sha256_update(&s, v, sizeof(float) * t->nelem);
		sha256_hex(&s, hex);
	}
	free(v);
	return gguf_ttype_name(t->type);
}

/* Every tensor of the .json that has type `only` (NULL: all) against the
 * same tensor of our file: same type, same dequantized values. Returns how
 * many were compared. */
static int compare_with(const char *ours, const char *json, const char *only)
{
	cJSON *j = load_json(json);
	struct gguf_file f;
	struct err e;
	int n = 0;
	if (!j || gguf_open(&f, ours, &e) < 0) {
		CHECK(0, "%s against %s: %s", ours, json, e.msg);
		cJSON_Delete(j);
		return 0;
	}
	for (const cJSON *t = cJSON_GetObjectItem(j, "tensors")->child; t; t = t->next) {
		const char *type = cJSON_GetObjectItem(t, "type")->valuestring;
		const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
		if (only && strcmp(type, only))
			continue;
		char hex[65];
		const char *mine = tensor_sha(&f, name, hex);
		CHECK(!strcmp(mine, type) &&
		      !strcmp(hex, cJSON_GetObjectItem(t, "sha256_f32")->valuestring),
		      "%s: %s: %s with values %s; llama.cpp's %s", ours, name, mine, hex, type);
		n++;
	}
	gguf_close(&f);
	cJSON_Delete(j);
	return n;
}

/* Every tensor of a golden byte record (shakespeare-tiny.LEVEL.bytes.json
 * in tests/golden/gguf: gguf-py's name, type, byte count and SHA-256 of the
 * stored bytes of each tensor of llama-quantize's file) against the same
 * tensor of our file: the same type, and byte for byte the same data.
 * Returns how many matched. */
static int same_bytes(const char *ours, const char *json)
{
	cJSON *j = load_json(json);
	struct gguf_file f;
	struct err e;
	int n = 0;
	if (!j || gguf_open(&f, ours, &e) < 0) {
		CHECK(0, "%s against %s: %s", ours, json, j ? e.msg : "no record");
		cJSON_Delete(j);
		return 0;
	}
	for (const cJSON *t = cJSON_GetObjectItem(j, "tensors")->child; t; t = t->next) {
		const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
		const char *type = cJSON_GetObjectItem(t, "type")->valuestring;
		const struct gguf_tensor *g = gguf_find_tensor(&f, name);
		char hex[65] = "";
		if (g) {
			struct sha256 s;
			sha256_init(&s);
			sha256_update(&s, g->data, g->bytes);
			sha256_hex(&s, hex);
		}
		bool ok = g && !strcmp(gguf_ttype_name(g->type), type) &&
			  !strcmp(hex, cJSON_GetObjectItem(t, "sha256")->valuestring);
		CHECK(ok, "%s: %s: %s with bytes %s; llama-quantize's %s", ours, name,
		      g ? gguf_ttype_name(g->type) : "absent", hex, type);
		n += ok;
	}
	gguf_close(&f);
	cJSON_Delete(j);
	return n;
}

/* quantize --format gguf, through the library: the bundled model written
 * at each level, read back by our reader, and compared with what
 * llama.cpp's tools wrote from the same weights (gguf-py's digests): our
 * bf16 and f16 files hold llama.cpp's values (f16 is bf16 rounded to
 * nearest even), our q4_0 file is llama-quantize's Q4_0 mix bit for bit
 * (its quantize_row_q4_0_ref and _q8_0_ref), and every tensor llama.cpp
 * stored as Q8_0 in any of its files is what our q8_0 file holds; our
 * q4_k_m, q5_k_m and q6_k files are llama-quantize's byte for byte, every
 * tensor (its Q4_K, Q5_K and Q6_K searches, and the Q5_0, Q5_1 and Q8_0
 * fallbacks of rows of 64). The files load as models with the bundled
 * model's config. */
static void test_write(void)
{
	char dir[] = "/tmp/test_gguf.XXXXXX";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	struct st_file st;
	struct model_config cfg;
	struct gen_config gen;
	struct mapfile tok;
	struct err e;
	if (config_load(&cfg, "data/shakespeare-tiny/config.json", &e) < 0 ||
	    st_open(&st, "data/shakespeare-tiny/model.safetensors", &e) < 0 ||
	    mapfile_open(&tok, "data/shakespeare-tiny/tokenizer.json", &e) < 0) {
		CHECK(0, "the bundled model: %s", e.msg);
		return;
	}
	gen_config_default(&gen, &cfg);
	CHECK(gen_config_load(&gen, "data/shakespeare-tiny/generation_config.json", &e) == 0,
	      "generation_config.json");
	struct gguf_out_model m = { .name = "shakespeare-tiny", .st = &st, .cfg = &cfg,
				    .gen = &gen, .tok_json = (const char *)tok.data,
				    .tok_len = tok.size, .tok_name = "tokenizer.json" };
	static const struct { const char *level; enum gguf_mix mix; } lv[] = {
		{ "bf16", GGUF_MIX_BF16 }, { "f16", GGUF_MIX_F16 }, { "q8_0", GGUF_MIX_Q8_0 },
		{ "q4_0", GGUF_MIX_Q4_0 }, { "q4_k_m", GGUF_MIX_Q4_K_M },
		{ "q5_k_m", GGUF_MIX_Q5_K_M }, { "q6_k", GGUF_MIX_Q6_K },
	};
	enum { NLV = sizeof lv / sizeof lv[0] };
	char path[NLV][96];
	for (int i = 0; i < NLV; i++) {
		snprintf(path[i], sizeof path[i], "%s/ours.%s.gguf", dir, lv[i].level);
		int rc = gguf_write_model(path[i], &m, lv[i].mix, &e);
		CHECK(rc == 0, "write %s: %s", path[i], rc ? e.msg : "");
		struct model mm;
		if (load_ok(&mm, path[i], 0) == 0) {
			CHECK(mm.cfg.hidden_size == cfg.hidden_size && mm.cfg.n_layers == cfg.n_layers &&
			      mm.cfg.vocab_size == cfg.vocab_size && mm.gen.top_k == gen.top_k &&
			      (float)mm.gen.temperature == (float)gen.temperature,
			      "%s: the config and sampling defaults read back", path[i]);
			model_free(&mm);
		}
	}
	CHECK(compare_with(path[0], GG "shakespeare-tiny.bf16.json", NULL) == 50, "bf16: 50");
	CHECK(compare_with(path[1], GG "shakespeare-tiny.f16.json", NULL) == 50, "f16: 50");
	CHECK(compare_with(path[3], GG "shakespeare-tiny.q4_0.json", NULL) == 50, "q4_0: 50");
	int q8 = compare_with(path[2], GG "shakespeare-tiny.q4_0.json", "Q8_0") +
		 compare_with(path[2], GG "shakespeare-tiny.q4_k_m.json", "Q8_0");
	CHECK(q8 == 4, "q8_0: %d of llama.cpp's Q8_0 tensors compared", q8);
	for (int i = 4; i < NLV; i++) {
		char rec[128];
		snprintf(rec, sizeof rec, GG "shakespeare-tiny.%s.bytes.json", lv[i].level);
		CHECK(same_bytes(path[i], rec) == 50, "%s: 50 tensors, llama-quantize's bytes",
		      lv[i].level);
	}
	/* every matrix of our q8_0 file (4 layers of 7, and the tied
	 * embedding) runs on the grouped int8 kernels */
	test_quant_model(path[2], 0, 29, 0, 0, 0);
	/* our q5_k_m file: its Q5_1 matrices (rows of 256 + 128) in 5-bit
	 * tiles, the rest Q8_0 and K-quants */
	test_quant_model(path[5], 0, 3, 22, 4, 0);
	/* the tokenizer of a file we wrote is HuggingFace's, special flags
	 * included (its types come from tokenizer.json's) */
	struct gguf_file f;
	struct bpe_vocab v;
	struct tokenizer *t = NULL;
	if (gguf_open(&f, path[0], &e) == 0) {
		if (gguf_vocab(&f, path[0], &v, &e) == 0) {
			t = tok_from_vocab(&v, path[0], &e);
			bpe_vocab_free(&v);
		}
		gguf_close(&f);
	}
	int special = 0;
	for (int32_t id = 0; t && id < tok_n_ids(t); id++)
		special += tok_is_special(t, id);
	CHECK(t && special == 14, "our file's tokenizer: 14 special tokens, as tokenizer.json");
	tok_free(t);
	for (int i = 0; i < NLV; i++)
		unlink(path[i]);
	rmdir(dir);
	mapfile_close(&tok);
	st_close(&st);
}

/* The k-quant mixes on a model whose rows are multiples of 256
 * (tests/fixtures/qwen-shapes: hidden 256, ffn 704, 2 layers, an LM head
 * of its own): Q4_K, Q5_K and Q6_K on every matrix but ffn_down (704 wide:
 * the Q5_0, Q5_1, Q8_0 fallbacks), 8320 Q4_K or Q5_K super-blocks and
 * 4224 to 12544 Q6_K ones per file, all byte for byte llama-quantize's
 * (tests/golden/gguf/qwen-shapes.LEVEL.bytes.json). The tokenizer is three
 * tokens: the records are of tensors only. */
static void test_write_shapes(void)
{
	static const char tok[] =
		"{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2}, \"merges\": []}, "
		"\"added_tokens\": []}";
	static const struct { const char *level; enum gguf_mix mix; } lv[] = {
		{ "q4_k_m", GGUF_MIX_Q4_K_M }, { "q5_k_m", GGUF_MIX_Q5_K_M },
		{ "q6_k", GGUF_MIX_Q6_K },
	};
	struct st_file st;
	struct model_config cfg;
	struct err e;
	if (config_load(&cfg, "tests/fixtures/qwen-shapes/config.json", &e) < 0 ||
	    st_open(&st, "tests/fixtures/qwen-shapes/model.safetensors", &e) < 0) {
		CHECK(0, "qwen-shapes: %s", e.msg);
		return;
	}
	struct gguf_out_model m = { .name = "qwen-shapes", .st = &st, .cfg = &cfg,
				    .tok_json = tok, .tok_len = strlen(tok),
				    .tok_name = "tokenizer" };
	char dir[] = "/tmp/test_gguf.XXXXXX";
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++) {
		char path[64], rec[96];
		snprintf(path, sizeof path, "%s/shapes.%s.gguf", dir, lv[i].level);
		snprintf(rec, sizeof rec, GG "qwen-shapes.%s.bytes.json", lv[i].level);
		int rc = gguf_write_model(path, &m, lv[i].mix, &e);
		CHECK(rc == 0, "write %s: %s", path, rc ? e.msg : "");
		CHECK(same_bytes(path, rec) == 27, "qwen-shapes %s: 27 tensors, llama-quantize's "
		      "bytes", lv[i].level);
		unlink(path);
	}
	rmdir(dir);
	st_close(&st);
}

/* gguf_narrow_bf16: values a bf16 holds (1, -0.5, 3 * 2^-20, 0) narrowed in
 * place to their high halves; one that needs more than 8 significant bits
 * (1 + 2^-10) leaves the array as it was. */
static void test_narrow_bf16(void)
{
	float v[4] = { 1.0f, -0.5f, 3.0f / (1 << 20), 0.0f }, was[4];
	memcpy(was, v, sizeof v);
	CHECK(gguf_narrow_bf16(v, 4), "bf16 holds 1, -0.5, 3 * 2^-20 and 0");
	const uint16_t *h = (const uint16_t *)v;
	CHECK(h[0] == 0x3f80 && h[1] == 0xbf00 && h[2] == 0x3640 && h[3] == 0,
	      "narrowed in place: %04x %04x %04x %04x", h[0], h[1], h[2], h[3]);
	float w[3] = { 1.0f, 1.0f + 1.0f / 1024, 2.0f };
	memcpy(was, w, sizeof w);
	CHECK(!gguf_narrow_bf16(w, 3) && !memcmp(w, was, sizeof w),
	      "1 + 2^-10 is not a bf16: nothing changed");
}

int main(void)
{
	test_narrow_bf16();
	test_write();
	test_write_shapes();
	test_bf16_model();
	test_quant_model(GG "shakespeare-tiny.q4_0.gguf", 8, 1, 0, 0, 0);
	test_quant_model(GG "shakespeare-tiny.q4_k_m.gguf", 0, 3, 22, 4, 0);
	/* down: Q2_K (dequantized) in layers 0 and 1, Q3_K (in Q6_K tiles) in 2,
	 * 3; q and up IQ4_NL (in 4-bit tiles) */
	test_quant_model(GG "shakespeare-tiny.q2_k.gguf", 0, 0, 0, 2, 8);
	/* llama-quantize's IQ4_XS: down IQ4_XS (rows of 256), every other
	 * matrix IQ4_NL (rows of 64), all in 4-bit tiles; the embedding Q4_0 */
	test_quant_model(GG "shakespeare-tiny.iq4_xs.gguf", 0, 0, 0, 0, 28);
	/* llama-quantize --pure IQ4_NL: every matrix, the tied embedding too
	 * (its rows looked up from the tiles, the LM head run on them) */
	test_quant_model(GG "shakespeare-tiny.iq4_nl.gguf", 0, 0, 0, 0, 29);
	test_tokenizer();
	test_q4_1_q5_1();
	test_q5_k();
	test_mutations();
	test_sha256();
	test_file(GG "shakespeare-tiny.bf16.gguf", GG "shakespeare-tiny.bf16.json");
	test_file(GG "shakespeare-tiny.q4_0.gguf", GG "shakespeare-tiny.q4_0.json");
	test_file(GG "shakespeare-tiny.q4_k_m.gguf", GG "shakespeare-tiny.q4_k_m.json");
	test_file(GG "shakespeare-tiny.q2_k.gguf", GG "shakespeare-tiny.q2_k.json");
	test_file(GG "shakespeare-tiny.iq4_xs.gguf", GG "shakespeare-tiny.iq4_xs.json");
	test_file(GG "shakespeare-tiny.iq4_nl.gguf", GG "shakespeare-tiny.iq4_nl.json");
	return check_done("test_gguf");
}
