/* bench/tok: the tokenizer's load time and single-thread encode throughput.
 *
 * Load: tok_load of the bundled tokenizer.json, median of RUNS. Encode: one
 * tokenizer, each input encoded RUNS times, median (the piece cache is
 * warm after the first run, as HuggingFace's is): shakespeare-tiny's
 * train.txt as one text, and the 10,004 texts of the golden corpus one call
 * each. Prints one JSON line (MB/s, tokens/s, peak RSS); asserts nothing.
 * scripts/bench-tok runs it beside the reference.
 *
 *   make bench        (appends the line to bench/results.jsonl)
 */
#include "harness/benchrun.h"
#include "core/slurp.h"
#include "text/tokenizer.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define TOKENIZER "data/qwen2.5-0.5b-instruct/tokenizer.json"
#define TRAIN "data/shakespeare-tiny/train.txt"
#define CORPUS "tests/golden/tokenizer/corpus.jsonl"
enum { RUNS = 7 };

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of this process: on a shared machine, what the work itself
 * cost, whatever the wall clock says. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* All of path, or exit 1 naming it. */
static char *read_all(const char *path, size_t *n)
{
	struct err e;
	char *s = slurp(path, n, &e);
	if (!s) {
		fprintf(stderr, "%s\n", e.msg);
		exit(1);
	}
	return s;
}

struct text {
	char *s;
	size_t n;
};

/* Median seconds to encode texts[0..nt) once; *tokens gets the count. */
static double encode_median(struct tokenizer *t, const struct text *texts, size_t nt,
			    size_t *tokens)
{
	double secs[RUNS];
	struct idvec ids = { 0 };
	struct err e;
	for (int r = 0; r < RUNS; r++) {
		*tokens = 0;
		double t0 = now();
		for (size_t i = 0; i < nt; i++) {
			ids.n = 0;
			if (tok_encode(t, (const unsigned char *)texts[i].s, texts[i].n, 0, &ids,
				       NULL, &e) < 0) {
				fprintf(stderr, "%s\n", e.msg);
				exit(1);
			}
			*tokens += ids.n;
		}
		secs[r] = now() - t0;
	}
	idvec_free(&ids);
	qsort(secs, RUNS, sizeof secs[0], cmp_double);
	return secs[RUNS / 2];
}

int main(void)
{
	struct err e;
	double load[RUNS], load_cpu[RUNS];
	struct tokenizer *t = NULL;
	for (int r = 0; r < RUNS; r++) {
		tok_free(t);
		double t0 = now(), c0 = cpu_now();
		t = tok_load(TOKENIZER, &e);
		load[r] = (now() - t0) * 1e3;
		load_cpu[r] = (cpu_now() - c0) * 1e3;
		if (!t) {
			fprintf(stderr, "%s\n", e.msg);
			return 1;
		}
	}
	qsort(load, RUNS, sizeof load[0], cmp_double);
	qsort(load_cpu, RUNS, sizeof load_cpu[0], cmp_double);

	struct text train;
	train.s = read_all(TRAIN, &train.n);
	size_t cn;
	char *all = read_all(CORPUS, &cn);
	size_t nt = 0, cap = 16384, corpus_bytes = 0;
	struct text *texts = malloc(cap * sizeof *texts);
	for (char *line = all, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		cJSON *j = cJSON_ParseWithLength(line, nl ? (size_t)(nl - line) : strlen(line));
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "text");
		if (cJSON_IsString(s) && nt < cap) {
			texts[nt].n = strlen(s->valuestring);
			texts[nt].s = strdup(s->valuestring);
			corpus_bytes += texts[nt++].n;
		}
		cJSON_Delete(j);
		if (!nl)
			break;
	}

	size_t train_tokens, corpus_tokens;
	double train_s = encode_median(t, &train, 1, &train_tokens);
	double corpus_s = encode_median(t, texts, nt, &corpus_tokens);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);

	double load1 = bench_loadavg();
	char date[32];
	time_t tnow = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tnow));
	printf("{\"bench\": \"tok\", \"impl\": \"qwenpipe\", \"date\": \"%s\", \"load1\": %.2f, "
	       "\"runs\": %d, \"load_ms_median\": %.1f, \"load_ms_best\": %.1f, "
	       "\"load_cpu_ms_median\": %.1f, "
	       "\"train\": {\"bytes\": %zu, \"tokens\": %zu, \"mb_s\": %.2f, \"tok_s\": %.0f}, "
	       "\"corpus\": {\"texts\": %zu, \"bytes\": %zu, \"tokens\": %zu, \"mb_s\": %.2f, "
	       "\"tok_s\": %.0f}, \"max_rss_mb\": %.1f}\n",
	       date, load1, RUNS, load[RUNS / 2], load[0], load_cpu[RUNS / 2], train.n, train_tokens,
	       train.n / train_s / 1e6, train_tokens / train_s, nt, corpus_bytes, corpus_tokens,
	       corpus_bytes / corpus_s / 1e6, corpus_tokens / corpus_s, ru.ru_maxrss / 1024.0);
	for (size_t i = 0; i < nt; i++)
		free(texts[i].s);
	free(texts);
	free(all);
	free(train.s);
	tok_free(t);
	return 0;
}
