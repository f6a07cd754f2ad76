/* The tokenizer against HuggingFace tokenizers 0.23.2 (tests/golden/):
 * the full 10,004-string corpus (ids and decode, exact), and, closed-form,
 * the streaming UTF-8 holder and the round trip of bytes that are not
 * UTF-8. */
#include "text/chat.h"
#include "check.h"
#include "text/tokenizer.h"
#include "core/utf8.h"

#include <cJSON.h>
#include <stdlib.h>
#include <utf8proc.h>
#include <string.h>

#define TOKENIZER "data/qwen2.5-0.5b-instruct/tokenizer.json"
#define CORPUS "tests/golden/tokenizer/corpus.jsonl"
#define CHAT "tests/golden/chat-template.jsonl"
#define CONFIG "data/qwen2.5-0.5b-instruct/tokenizer_config.json"

/* The concatenated bytes of ids[0..n) (malloc'd; *len its length), or NULL
 * if some id is not a token. */
static unsigned char *decode(const struct tokenizer *t, const int32_t *ids, size_t n,
			     size_t *len)
{
	size_t cap = 64, k = 0;
	unsigned char *out = malloc(cap);
	for (size_t i = 0; i < n; i++) {
		size_t bl;
		const unsigned char *b = tok_bytes(t, ids[i], &bl);
		if (!b) {
			free(out);
			return NULL;
		}
		while (k + bl > cap)
			out = realloc(out, cap *= 2);
		memcpy(out + k, b, bl);
		k += bl;
	}
	*len = k;
	return out;
}

static void print_ids(const char *what, const int32_t *ids, size_t n, size_t from)
{
	fprintf(stderr, "  %s (%zu ids, from index %zu):", what, n, from);
	for (size_t i = from; i < n && i < from + 40; i++)
		fprintf(stderr, " %d", ids[i]);
	fprintf(stderr, "%s\n", n > from + 40 ? " ..." : "");
}

/* Every corpus line: exact ids, exact decode. */
static void corpus(struct tokenizer *t)
{
	size_t size;
	char *all = check_slurp(CORPUS, &size);
	long lines = 0, ok_ids = 0, ok_dec = 0, first_bad = 0;
	struct idvec got = { 0 };
	int32_t *want = NULL;
	for (char *line = all, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line);
		lines++;
		cJSON *j = cJSON_ParseWithLength(line, (size_t)(nl - line));
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
		const cJSON *ids = cJSON_GetObjectItemCaseSensitive(j, "ids");
		const cJSON *dec = cJSON_GetObjectItemCaseSensitive(j, "decoded");
		if (!cJSON_IsString(text) || !cJSON_IsArray(ids) || !cJSON_IsString(dec)) {
			CHECK(0, "%s: line %ld: not a corpus record", CORPUS, lines);
			cJSON_Delete(j);
			break;
		}
		size_t nw = (size_t)cJSON_GetArraySize(ids), k = 0;
		want = realloc(want, (nw + 1) * sizeof *want);
		const cJSON *it;
		cJSON_ArrayForEach(it, ids)
			want[k++] = (int32_t)it->valuedouble;
		got.n = 0;
		struct err e;
		int rc = tok_encode(t, (const unsigned char *)text->valuestring,
				    strlen(text->valuestring), 0, &got, NULL, &e);
		int same = rc == 0 && got.n == nw && memcmp(got.v, want, nw * sizeof *want) == 0;
		ok_ids += same;
		if (!same && !first_bad) {
			first_bad = lines;
			size_t d = 0;
			while (d < nw && d < got.n && got.v[d] == want[d])
				d++;
			fprintf(stderr, "first mismatch: %s line %ld (%s), first difference at id %zu\n",
				CORPUS, lines,
				cJSON_GetObjectItemCaseSensitive(j, "kind")->valuestring, d);
			print_ids("want", want, nw, d > 5 ? d - 5 : 0);
			print_ids("got ", got.v, got.n, d > 5 ? d - 5 : 0);
		}
		size_t dl;
		unsigned char *d = decode(t, want, nw, &dl);
		int dsame = d && dl == strlen(dec->valuestring) && memcmp(d, dec->valuestring, dl) == 0;
		ok_dec += dsame;
		if (!dsame && ok_dec == lines - 1)
			fprintf(stderr, "first decode mismatch: %s line %ld\n", CORPUS, lines);
		free(d);
		cJSON_Delete(j);
		if (!*nl)
			break;
	}
	printf("corpus: %ld/%ld exact ids, %ld/%ld exact decode\n", ok_ids, lines, ok_dec, lines);
	CHECK(lines == 10004, "corpus has %ld lines, want 10004", lines);
	CHECK(ok_ids == lines, "ids: %ld of %ld differ (first: line %ld)", lines - ok_ids, lines, first_bad);
	CHECK(ok_dec == lines, "decode: %ld of %ld differ", lines - ok_dec, lines);
	idvec_free(&got);
	free(want);
	free(all);
}

/* The tokenizer skips NFC for text with no byte from 0xCC up, that is with
 * every code point below U+0300. Sound because each such code point is a
 * starter (combining class 0) that NFC leaves alone, and none can compose
 * with what precedes it (none is a non-first part of any canonical
 * decomposition): checked here over all of Unicode, with utf8proc's own
 * tables. */
static void nfc_fast_path(void)
{
	int bad = 0;
	for (utf8proc_int32_t c = 0; c <= 0x10FFFF; c++) {
		if (c >= 0xD800 && c <= 0xDFFF)
			continue;
		if (c < 0x300) {
			unsigned char in[4];
			utf8proc_uint8_t *out = NULL;
			utf8proc_ssize_t n = utf8_encode(c, in);
			utf8proc_ssize_t m = utf8proc_map(in, n, &out, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
			if (m != n || memcmp(out, in, (size_t)n) != 0 ||
			    utf8proc_get_property(c)->combining_class != 0)
				bad++;
			free(out);
		}
		utf8proc_int32_t d[8];
		int last;
		utf8proc_ssize_t n = utf8proc_decompose_char(c, d, 8, UTF8PROC_DECOMPOSE, &last);
		for (utf8proc_ssize_t k = 1; k < n && k < 8; k++)
			if (d[k] < 0x300)
				bad++;
	}
	CHECK(bad == 0, "NFC fast path: %d code points break its premise", bad);
}

/* Every conversation of the chat golden file (transformers'
 * apply_chat_template) renders to exactly its text and encodes to exactly
 * its ids; the bundled template is the one implemented. */
static void chat(struct tokenizer *t)
{
	struct err e;
	CHECK(chat_check(CONFIG, &e) == 0, "chat_check: %s", e.msg);
	size_t size;
	char *all = check_slurp(CHAT, &size);
	int cases = 0, ok = 0;
	struct idvec ids = { 0 };
	for (char *line = all, *nl; all && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		cJSON *j = cJSON_ParseWithLength(line, nl ? (size_t)(nl - line) : strlen(line));
		char *msgs_json = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "messages"));
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
		const cJSON *want = cJSON_GetObjectItemCaseSensitive(j, "ids");
		int gen = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt"));
		struct chat_msg *msgs = NULL;
		size_t count = 0, len = 0;
		char *out = NULL;
		int good = msgs_json && cJSON_IsString(text) &&
			   chat_parse(msgs_json, strlen(msgs_json), &msgs, &count, &e) == 0 &&
			   chat_render(msgs, count, gen, &out, &len, &e) == 0 &&
			   len == strlen(text->valuestring) && memcmp(out, text->valuestring, len) == 0;
		ids.n = 0;
		good = good && tok_encode(t, (const unsigned char *)out, len, 0, &ids, NULL, &e) == 0 &&
		       ids.n == (size_t)cJSON_GetArraySize(want);
		for (size_t i = 0; good && i < ids.n; i++)
			good = ids.v[i] == cJSON_GetArrayItem(want, (int)i)->valueint;
		CHECK(good, "%s: line %d: rendering or ids differ", CHAT, cases + 1);
		ok += good;
		cases++;
		free(out);
		chat_free(msgs, count);
		free(msgs_json);
		cJSON_Delete(j);
		if (!nl)
			break;
	}
	printf("chat: %d/%d conversations exact\n", ok, cases);
	CHECK(cases == 8, "%s has %d conversations, want 8", CHAT, cases);
	idvec_free(&ids);
	free(all);
}

/* The holder, closed-form: a character split across pushes comes out
 * whole with the push that completes it, nothing before; invalid bytes are
 * never held. */
static void streaming(void)
{
	struct utf8_hold h = { 0 };
	unsigned char out[16];
	/* "é" = C3 A9 in two tokens */
	CHECK(utf8_hold_push(&h, (const unsigned char *)"\xc3", 1, out) == 0,
	      "first half of a 2-byte character printed something");
	size_t n = utf8_hold_push(&h, (const unsigned char *)"\xa9", 1, out);
	CHECK(n == 2 && memcmp(out, "\xc3\xa9", 2) == 0, "second half: got %zu bytes", n);
	/* U+1F600 (F0 9F 98 80) as "a F0", "9F", "98 80 b" */
	n = utf8_hold_push(&h, (const unsigned char *)"a\xf0", 2, out);
	CHECK(n == 1 && out[0] == 'a', "before an emoji: got %zu bytes", n);
	CHECK(utf8_hold_push(&h, (const unsigned char *)"\x9f", 1, out) == 0, "emoji, 2 of 4");
	n = utf8_hold_push(&h, (const unsigned char *)"\x98\x80" "b", 3, out);
	CHECK(n == 5 && memcmp(out, "\xf0\x9f\x98\x80" "b", 5) == 0, "emoji completed: %zu bytes", n);
	/* invalid: a lone continuation byte, a lead byte followed by a
	 * non-continuation, a surrogate's lead: all pass straight through */
	n = utf8_hold_push(&h, (const unsigned char *)"\x80", 1, out);
	CHECK(n == 1, "a lone continuation byte was held");
	n = utf8_hold_push(&h, (const unsigned char *)"\xe2(", 2, out);
	CHECK(n == 2, "E2 followed by '(' was held");
	n = utf8_hold_push(&h, (const unsigned char *)"\xed\xa0", 2, out);
	CHECK(n == 2, "ED A0 (a surrogate) was held");
	/* end of stream: a held partial character is released as it is */
	utf8_hold_push(&h, (const unsigned char *)"\xe4\xb8", 2, out);
	n = utf8_hold_flush(&h, out);
	CHECK(n == 2 && memcmp(out, "\xe4\xb8", 2) == 0, "flush released %zu bytes", n);
}

/* xorshift64*: a fixed-seed generator for the property test. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

/* Random byte strings (mixing arbitrary bytes, ASCII, valid multi-byte
 * characters, special-token text, truncated characters, and sequences that
 * are never valid) encode without error, and decode to exactly the same
 * bytes. Valid text reports no invalid bytes. The valid characters are all
 * NFC already, so normalization leaves them alone. */
static void non_utf8_round_trip(struct tokenizer *t)
{
	static const char *const frag[] = {
		" ", "\n", "the", "'s", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
		"<|im_start|>", "12", "\xe2\x80\xa8", "\xc2\x85",
		/* never valid (the last three): a surrogate, past U+10FFFF, overlong */
		"\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf",
	};
	const uint32_t n_frag = sizeof frag / sizeof frag[0], n_valid = n_frag - 3;
	int bad = 0, invalid_seen = 0;
	struct idvec ids = { 0 };
	unsigned char s[256];
	for (int iter = 0; iter < 2000; iter++) {
		size_t n = 0, want = rnd() % 200;
		int all_valid = iter % 4 == 0; /* a quarter of the strings are valid UTF-8 */
		while (n < want) {
			uint32_t k = rnd() % 4;
			if (k == 0 && !all_valid) {
				/* any byte but the leads of characters from U+0300 on,
				 * so that no valid character NFC would change can
				 * arise by chance (the round trip is exact for text
				 * that is already NFC) */
				unsigned char c = (unsigned char)rnd();
				s[n++] = c >= 0xCC && c <= 0xF4 ? c - 0x60 : c;
			} else if (k == 1 && !all_valid) {
				const char *f = frag[rnd() % n_frag];
				/* a strict prefix, then an ASCII letter so that no
				 * random byte can complete it */
				size_t fl = strlen(f), cut = fl > 1 ? 1 + rnd() % (fl - 1) : 1;
				for (size_t i = 0; i < cut && n + 1 < sizeof s; i++)
					s[n++] = (unsigned char)f[i];
				s[n++] = 'x';
			} else {
				const char *f = frag[rnd() % (all_valid ? n_valid : n_frag)];
				size_t fl = strlen(f);
				if (n + fl > sizeof s)
					break;
				memcpy(s + n, f, fl);
				n += fl;
			}
		}
		ids.n = 0;
		struct err e;
		size_t n_invalid = 0, dl = 0;
		if (tok_encode(t, s, n, 0, &ids, &n_invalid, &e) < 0) {
			bad++;
			continue;
		}
		invalid_seen += n_invalid > 0;
		unsigned char *d = decode(t, ids.v, ids.n, &dl);
		if (!d || dl != n || memcmp(d, s, n) != 0 || (all_valid && n_invalid)) {
			if (!bad)
				fprintf(stderr, "round trip failed: iteration %d, %zu bytes\n", iter, n);
			bad++;
		}
		free(d);
	}
	CHECK(bad == 0, "non-UTF-8 round trip: %d of 2000 strings differ", bad);
	CHECK(invalid_seen > 1000, "only %d strings had invalid bytes", invalid_seen);
	idvec_free(&ids);
}

int main(void)
{
	streaming();
	nfc_fast_path();
	struct err e;
	struct tokenizer *t = tok_load(TOKENIZER, &e);
	CHECK(t != NULL, "load: %s", e.msg);
	if (!t)
		return check_done("test_tokenizer");
	corpus(t);
	chat(t);
	non_utf8_round_trip(t);
	tok_free(t);
	return check_done("test_tokenizer");
}
