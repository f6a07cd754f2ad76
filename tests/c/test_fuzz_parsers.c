/* A small deterministic mutation fuzzer for the parsers of untrusted files
 * (safetensors headers, config.json, generation_config.json), run with the
 * suite, so that `make check` runs it under ASan and UBSan.
 *
 * Each round copies a valid seed, applies a few random mutations (bit
 * flips, interesting bytes, JSON tokens, cuts, repeats) and parses it. A
 * parse must either fail with a message or succeed with a result that obeys
 * the format's rules, checked here independently of the parser: tensors
 * tile the data section, views lie inside the buffer, names are unique and
 * valid UTF-8; config sizes are positive and divide as the header promises.
 * A crash, a sanitizer report or a broken rule fails the test.
 */
#include "check.h"
#include "format/config.h"
#include "core/jsonutil.h"
#include "format/safetensors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 20000    /* per seed */
#define CAP 4096        /* mutated inputs never grow past this */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Mutates buf[0..*n) in place, keeping *n <= CAP. */
static void mutate(unsigned char *buf, size_t *n)
{
	static const char *tokens[] = {
		"\"", "{", "}", "[", "]", ",", ":", "-1", "0", "1e308", "18446744073709551616",
		"4294967296", "null", "\"F32\"", "\"data_offsets\"", "\"shape\"", "\\u0000",
		"\xff", "\xc0\x80", "\xed\xa0\x80", " ",
	};
	int k = 1 + (int)(rnd() % 4);
	while (k--) {
		size_t at = *n ? rnd() % *n : 0;
		switch (rnd() % 5) {
		case 0:
			if (*n)
				buf[at] ^= (unsigned char)(1u << (rnd() % 8));
			break;
		case 1:
			if (*n)
				buf[at] = (unsigned char)"\0\xff\"[]{}-9:,"[rnd() % 12];
			break;
		case 2: {
			const char *t = tokens[rnd() % (sizeof tokens / sizeof *tokens)];
			size_t len = strlen(t);
			if (*n + len <= CAP) {
				memmove(buf + at + len, buf + at, *n - at);
				memcpy(buf + at, t, len);
				*n += len;
			}
			break;
		}
		case 3:
			*n = at;
			break;
		default: {
			size_t len = rnd() % 16;
			if (at + len <= *n && *n + len <= CAP) {
				memmove(buf + at + len, buf + at, *n - at);
				*n += len;
			}
		}
		}
	}
}

/* The rules a successfully parsed safetensors image must obey. */
static int st_sane(const struct st_file *f, const unsigned char *buf, size_t n)
{
	if (f->data_offset != 8 + f->header_len || f->data_offset > n)
		return 0;
	uint64_t pos = 0, data_size = n - f->data_offset;
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		uint64_t elems = 1;
		for (int d = 0; d < t->ndim; d++) {
			if (t->shape[d] < 0)
				return 0;
			elems *= (uint64_t)t->shape[d];
		}
		if (t->begin != pos || t->end < t->begin || t->end > data_size ||
		    elems != t->nelem || (t->end - t->begin) * 8 != elems * st_dtype_bits(t->dtype) ||
		    (const unsigned char *)t->data != buf + f->data_offset + t->begin ||
		    !utf8_valid(t->name))
			return 0;
		for (int j = 0; j < i; j++)
			if (strcmp(f->tensors[j].name, t->name) == 0)
				return 0;
		pos = t->end;
	}
	return pos == data_size;
}

static int config_sane(const struct model_config *c)
{
	return c->vocab_size > 0 && c->hidden_size > 0 && c->intermediate_size > 0 &&
	       c->n_layers > 0 && c->n_kv_heads > 0 && c->n_heads % c->n_kv_heads == 0 &&
	       c->head_dim * c->n_heads == c->hidden_size && c->head_dim % 2 == 0 &&
	       c->rms_norm_eps > 0 && c->rope_theta > 0 && c->n_eos >= 0 &&
	       c->n_eos <= CFG_MAX_EOS && (c->n_eos == 0 || (c->eos_ids[0] >= 0 &&
	       c->eos_ids[0] < c->vocab_size)) && c->bos_id < c->vocab_size;
}

/* "8-byte length + json + nzero zero bytes" into buf; returns the size. */
static size_t image(unsigned char *buf, const char *json, size_t nzero)
{
	size_t h = strlen(json);
	for (int i = 0; i < 8; i++)
		buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
	memcpy(buf + 8, json, h);
	memset(buf + 8 + h, 0, nzero);
	return 8 + h + nzero;
}

static void fuzz_st(void)
{
	static const struct { const char *json; size_t data; } seeds[] = {
		{ "{\"__metadata__\":{\"format\":\"pt\"},"
		  "\"a\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
		  "\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[12,24]},"
		  "\"c\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[24,25]}}", 25 },
		{ "{\"w\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[0,0]},"
		  "\"x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}  ", 4 },
	};
	static unsigned char seed[CAP], buf[CAP];
	int ok = 1, accepted = 0, rejected = 0;
	for (size_t s = 0; s < sizeof seeds / sizeof *seeds; s++) {
		size_t n0 = image(seed, seeds[s].json, seeds[s].data);
		for (int r = 0; r < ROUNDS; r++) {
			size_t n = n0;
			memcpy(buf, seed, n);
			mutate(buf, &n);
			struct st_file f;
			struct err e;
			if (st_parse(&f, buf, n, "fuzz", &e) == 0) {
				accepted++;
				if (!st_sane(&f, buf, n))
					ok = 0;
				st_close(&f);
			} else {
				rejected++;
				if (!strchr(e.msg, ':') || strchr(e.msg, '\n'))
					ok = 0;  /* one line, naming the input */
			}
		}
	}
	CHECK(ok, "safetensors: every accepted image obeys the rules, every "
	      "rejection is one line (%d accepted, %d rejected)", accepted, rejected);
	CHECK(accepted > 0 && rejected > 0, "the mutations reach both outcomes "
	      "(%d accepted, %d rejected)", accepted, rejected);
}

static void fuzz_config(void)
{
	static const char seed[] =
		"{\"model_type\": \"qwen2\", \"vocab_size\": 100, \"hidden_size\": 32,\n"
		" \"intermediate_size\": 64, \"num_hidden_layers\": 2,\n"
		" \"num_attention_heads\": 4, \"num_key_value_heads\": 2,\n"
		" \"max_position_embeddings\": 128, \"rope_theta\": 10000.0,\n"
		" \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true,\n"
		" \"bos_token_id\": 0, \"eos_token_id\": [1, 2],\n"
		" \"temperature\": 0.7, \"top_k\": 20, \"top_p\": 0.8}";
	static unsigned char buf[CAP];
	int ok = 1, accepted = 0, rejected = 0;
	for (int r = 0; r < ROUNDS; r++) {
		size_t n = sizeof seed - 1;
		memcpy(buf, seed, n);
		mutate(buf, &n);
		struct model_config c;
		struct gen_config g;
		struct err e;
		if (config_parse(&c, (const char *)buf, n, "fuzz", &e) == 0) {
			accepted++;
			ok &= config_sane(&c);
		} else {
			rejected++;
			ok &= strncmp(e.msg, "fuzz: ", 6) == 0 && !strchr(e.msg, '\n');
		}
		gen_config_default(&g, &c);
		if (gen_config_parse(&g, (const char *)buf, n, "fuzz", &e) == 0)
			ok &= g.top_p > 0 && g.top_p <= 1 && g.top_k >= 0 && g.temperature >= 0;
	}
	CHECK(ok, "config: accepted configs obey the invariants, rejections are "
	      "one line (%d accepted, %d rejected)", accepted, rejected);
	CHECK(accepted > 0 && rejected > 0, "the mutations reach both outcomes "
	      "(%d accepted, %d rejected)", accepted, rejected);
}

int main(void)
{
	fuzz_st();
	fuzz_config();
	return check_done("test_fuzz_parsers");
}
