/* bench/sampler: what one token costs the sampler at the full vocabulary.
 *
 * Logits: the real last-position logits of shakespeare-tiny on "ROMEO:"
 * (tests/golden/shakespeare-tiny/romeo.last.f32, 151,936 tokens), with a
 * 100-id context for the repetition penalty. For each setting it runs the
 * whole chain (sampler_next: penalty, temperature, top-k, top-p, min-p,
 * softmax, draw) many times and reports the median and the best, in
 * microseconds per token, as one JSON line on stdout. Asserts nothing.
 *
 *   make bench        (appends the line to bench/results.jsonl)
 */
#include "harness/benchrun.h"
#include "core/rng.h"
#include "sample/sampler.h"
#include "core/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOGITS "tests/golden/shakespeare-tiny/romeo.last.f32"
enum { REPS = 300 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	FILE *f = fopen(LOGITS, "rb");
	if (!f) {
		perror(LOGITS);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	int n = (int)(ftell(f) / 4);
	rewind(f);
	float *x = malloc(sizeof *x * (size_t)n);
	if (fread(x, 4, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: short read\n", LOGITS);
		return 1;
	}
	fclose(f);

	struct err e;
	struct sampler *s = sampler_new(n, &e);
	struct rng r;
	rng_seed(&r, 1);
	int32_t ctx[100];
	for (int i = 0; i < 100; i++)
		ctx[i] = (int32_t)(rng_next(&r) % (uint64_t)n);
	sampler_add_context(s, ctx, 100, &e);

	struct {
		const char *name;
		struct sampler_params p;
	} cases[] = {
		{ "greedy", { .temperature = 0, .top_p = 1, .repetition_penalty = 1 } },
		{ "top_k_20", { .temperature = 0.7, .top_k = 20, .top_p = 1,
				.repetition_penalty = 1 } },
		{ "top_p_0.8", { .temperature = 0.7, .top_p = 0.8,
				 .repetition_penalty = 1 } },
		{ "full_chain", { .temperature = 0.7, .top_k = 20, .top_p = 0.8,
				  .min_p = 0.05, .repetition_penalty = 1.1 } },
		{ "temperature_only", { .temperature = 0.7, .top_p = 1,
					.repetition_penalty = 1 } },
	};
	int nc = sizeof cases / sizeof cases[0];
	/* The machine is shared: the load goes with the figures. */
	double load = bench_loadavg();
	char date[32];
	time_t tnow = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tnow));
	printf("{\"bench\": \"sampler\", \"date\": \"%s\", \"load1\": %.2f, "
	       "\"n_vocab\": %d, \"unit\": \"us/token\"", date, load, n);
	for (int c = 0; c < nc; c++) {
		double t[REPS];
		for (int i = 0; i < REPS; i++) {
			double t0 = time_now();
			if (sampler_next(s, x, &cases[c].p, &r, &e) < 0) {
				fprintf(stderr, "%s\n", e.msg);
				return 1;
			}
			t[i] = (time_now() - t0) * 1e6;
		}
		qsort(t, REPS, sizeof t[0], cmp_double);
		printf(", \"%s\": {\"median\": %.1f, \"best\": %.1f}", cases[c].name,
		       t[REPS / 2], t[0]);
	}
	printf("}\n");
	sampler_free(s);
	free(x);
	return 0;
}
