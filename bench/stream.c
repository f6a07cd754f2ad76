/* bench/stream: one decode token's matrix products over the matrices of
 * Qwen2.5-0.5B (data/qwen2.5-0.5b-instruct/config.json: every layer's q, k,
 * v, o, gate, up and down, then the tied LM head), stored as bf16, with the
 * rows as the file has them and interleaved in blocks of four (the layout a
 * model that owns its weights uses, lib/kernels/weights.h), the two
 * alternating in each repetition, on one thread and on two (the pool,
 * split by rows as the forward pass splits them). The two layouts give the
 * same bits, which is checked here.
 *
 * Each pass streams about 988 MB from DRAM. For each layout and thread
 * count: the best and the median of REPS passes and the bytes per second
 * of the best; the read bandwidth of the same thread count (membw.h) is
 * measured in the same run. One JSON line on stdout; asserts nothing else.
 *
 *   make bench        (appends the line to bench/results.jsonl)
 */
#include "core/bf16.h"
#include "core/pool.h"
#include "core/rng.h"
#include "core/timing.h"
#include "format/config.h"
#include "harness/membw.h"
#include "kernels/kernels.h"
#include "kernels/matmul.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG "data/qwen2.5-0.5b-instruct/config.json"
enum { REPS = 7, SPLIT = 16 };

struct pass {
	const struct kernels *k;
	struct wmat *w;
	int n;
	const float *x;
	float *y;     /* every matrix's outputs but the last's */
	float *head;  /* the last's (the LM head), compared between the layouts */
};

/* Thread i's rows of every matrix, in the order of a token. */
static void part(void *arg, int i, int n)
{
	struct pass *p = arg;
	for (int m = 0; m < p->n; m++) {
		int lo, hi;
		pool_split(p->w[m].rows, i, n, SPLIT, &lo, &hi);
		kern_matmul(p->k, &(struct kern_mm){ .y = m == p->n - 1 ? p->head : p->y,
			.ldy = p->w[m].rows,
			.w = &p->w[m], .r0 = lo, .r1 = hi, .x = p->x, .ldx = p->w[m].cols, .T = 1 });
	}
}

int main(void)
{
	struct model_config c;
	struct err e;
	if (config_load(&c, CONFIG, &e) < 0) {
		fprintf(stderr, "bench/stream: %s\n", e.msg);
		return 1;
	}
	int H = c.hidden_size, F = c.intermediate_size, Q = c.n_heads * c.head_dim,
	    KV = c.n_kv_heads * c.head_dim, n = 7 * c.n_layers + 1;
	int shape[7][2] = { { Q, H }, { KV, H }, { KV, H }, { H, Q }, { F, H }, { F, H }, { H, F } };
	struct wmat *w[2] = { calloc((size_t)n, sizeof(struct wmat)),
			      calloc((size_t)n, sizeof(struct wmat)) };
	size_t bytes = 0;
	struct rng g;
	rng_seed(&g, 7);
	for (int m = 0; m < n; m++) {
		int rows = m == n - 1 ? c.vocab_size : shape[m % 7][0];
		int cols = m == n - 1 ? H : shape[m % 7][1];
		size_t cnt = (size_t)rows * cols;
		uint16_t *a = aligned_alloc(64, 2 * cnt), *b = aligned_alloc(64, 2 * cnt);
		if (!a || !b) {
			fprintf(stderr, "bench/stream: out of memory\n");
			return 1;
		}
		for (size_t i = 0; i < cnt; i++)
			a[i] = b[i] = f32_to_bf16((float)(rng_uniform(&g) - 0.5) * 0.1f);
		for (int l = 0; l < 2; l++)
			w[l][m] = (struct wmat){ .type = WT_BF16, .rows = rows, .cols = cols,
						 .data = l ? b : a };
		if (!wmat_can_interleave(&w[1][m]) || kern_interleave(&w[1][m], b, 0) < 0) {
			fprintf(stderr, "bench/stream: cannot interleave a %dx%d matrix\n", rows, cols);
			return 1;
		}
		bytes += 2 * cnt;
	}
	int X = F > c.vocab_size ? F : c.vocab_size;
	float *x = malloc(sizeof(float) * (size_t)X), *y = malloc(sizeof(float) * (size_t)X);
	float *head[2] = { malloc(sizeof(float) * (size_t)c.vocab_size),
			   malloc(sizeof(float) * (size_t)c.vocab_size) };
	for (int i = 0; i < X; i++)
		x[i] = (float)(i % 7) * 0.25f - 0.75f;
	const struct kernels *k = kernels_for(cpu_level_env(NULL));
	printf("{\"bench\":\"stream\",\"kernels\":\"%s\",\"matrices\":%d,\"bytes\":%zu",
	       cpu_level_name(k->level), n, bytes);
	static const char *names[2] = { "row_major", "interleaved" };
	for (int threads = 1; threads <= 2; threads++) {
		struct pool *p = pool_new(threads, &e);
		struct membw bw;
		if (!p || membw_measure(&bw, threads, (size_t)1 << 30, 5, &e) < 0) {
			fprintf(stderr, "bench/stream: %s\n", e.msg);
			return 1;
		}
		double t[2][REPS];
		for (int r = -1; r < REPS; r++)
			for (int l = 0; l < 2; l++) {
				struct pass ps = { .k = k, .w = w[l], .n = n, .x = x, .y = y,
						   .head = head[l] };
				double t0 = time_now();
				pool_run(p, part, &ps);
				if (r >= 0)
					t[l][r] = time_now() - t0;
			}
		/* the last matrix's outputs (the LM head's), the same bits */
		int same = !memcmp(head[0], head[1], sizeof(float) * (size_t)c.vocab_size);
		printf(",\"threads_%d\":{\"membw_gb_s\":%.2f,\"same_bits\":%s", threads, bw.gbs.max,
		       same ? "true" : "false");
		for (int l = 0; l < 2; l++) {
			struct spread s = spread_of(t[l], REPS);
			printf(",\"%s\":{\"best_ms\":%.2f,\"median_ms\":%.2f,\"gb_s\":%.2f}", names[l],
			       s.min * 1e3, s.median * 1e3, (double)bytes / s.min / 1e9);
		}
		printf("}");
		pool_free(p);
	}
	printf("}\n");
	return 0;
}
