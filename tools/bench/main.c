/* bench: how fast the engine runs, against this machine's own limits.
 *
 *   bench MODEL... [-p 64] [-n 64] [-r 10] [-t 1,2] [-o md|jsonl|csv]
 *   bench --synthetic [MODEL...]      the full-size synthetic bf16, int8, int4
 *   bench --membw                     memory bandwidth only
 *
 * For every contender (each MODEL with each --weights mode, and with
 * --f32-activations each int8 / int4 model once more with float32
 * activations, its exact mode) and thread
 * count: prefill tokens/s, time to first token, decode ms/token, the
 * sampler's cost per token (bench/harness/benchrun.h), repeated -r times after a
 * warm-up; median, minimum and maximum. The contenders alternate inside
 * each repetition (A, B, A, B, ...), so a busy machine slows them alike and
 * every repetition is a matched pair: each contender's wins against the
 * first are counted. Decode is also reported as a fraction of its limit:
 * bytes of weights per token x tokens/s / the read bandwidth measured in
 * the same run at that thread count (bench/harness/membw.h). Each model's open time
 * and the resident memory it adds are measured once, and an OpenBLAS sgemm
 * prefill on the same float32 shapes is the reference for prefill.
 *
 * With --llama-bench PATH --gguf FILE..., an external llama.cpp llama-bench
 * runs inside the same repetitions (bench/harness/llama.h): in each
 * repetition our contenders, then llama-bench once on every GGUF file
 * (one repetition of its own, after its own warm-up); each of ours starts
 * with one untimed token, which reads its weights back in after that
 * pause. The n-th --gguf file is the n-th MODEL's
 * counterpart (--synthetic's three models first); each of our contenders
 * is paired with its model's file, repetition by repetition: the ratio of
 * tokens/s in each, and in how many ours was faster.
 *
 * The report goes to stdout (-o); the same figures, one JSON object per
 * line, are appended to bench/results.jsonl (--record), never rewritten.
 */
#include "harness/benchrun.h"
#include "harness/llama.h"
#include "cli/cli.h"
#include "format/modelpath.h"
#include "core/parse.h"
#include "core/cpu.h"
#include "model/forward.h"
#include "harness/membw.h"
#include "sample/sampler.h"
#include "harness/synthetic.h"
#include "core/timing.h"

#include <cJSON.h>
#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_ACT8 = CLI_LONG, OPT_F32ACT, OPT_B16ACT, OPT_SYNTH, OPT_CONFIG, OPT_MEMBW,
       OPT_MEMBW_MIB, OPT_NO_SGEMM, OPT_RECORD, OPT_NO_RECORD, OPT_LLAMA, OPT_GGUF };

static const struct cli_opt opts[] = {
	{ 0, "MODEL", NULL, "a model directory, a .safetensors file, a .q8/.q4\n"
	  "container or a GGUF file" },
	{ 'p', "prompt|n-prompt", "N", "prompt tokens for prefill and TTFT (default 64)" },
	{ 'n', "tokens|n-gen|n-predict", "N", "tokens decoded per repetition (default 64)" },
	{ 'r', "reps|repetitions", "N", "repetitions after one warm-up (default 10)" },
	{ 't', "threads", "LIST", "thread counts, comma-separated (default 1 and the\n"
	  "physical cores)" },
	{ 'o', "output", "FMT", "md (default), jsonl (the records) or csv (one row\n"
	  "per model record) on stdout" },
	{ 'w', "weights", "LIST", "how each model is held, comma-separated: copied\n"
	  "(read into memory; the default), mapped (used\n"
	  "through the file mapping, forward --mmap), f32\n"
	  "(widened, forward --f32)" },
	{ OPT_ACT8, "int8-activations", NULL, "int8 / int4 models with int8 activations: the\n"
	  "default, accepted for scripts that say it" },
	{ OPT_F32ACT, "f32-activations", NULL, "also run each int8 / int4 model with float32\n"
	  "activations (forward --f32-activations, the exact\n"
	  "mode): one more contender each, named with +f32" },
	{ OPT_B16ACT, "bf16-activations", NULL, "also run each bf16 model with bf16 activations\n"
	  "(forward --bf16-activations): one more contender\n"
	  "each, named with +b16" },
	{ OPT_SYNTH, "synthetic", NULL, "add the synthetic full-size bf16 model and its\n"
	  "int8 and int4 containers (written once to\n"
	  "${XDG_CACHE_HOME:-~/.cache}/qwenpipe)" },
	{ OPT_CONFIG, "config", "FILE", "the shapes of the synthetic model (default\n"
	  SYNTHETIC_CONFIG ")" },
	{ OPT_MEMBW, "membw", NULL, "measure the memory bandwidth only" },
	{ OPT_MEMBW_MIB, "membw-mib", "N", "bandwidth buffer size (default 1024; larger than\n"
	  "the caches)" },
	{ OPT_NO_SGEMM, "no-sgemm", NULL, "skip the OpenBLAS float32 prefill reference" },
	{ OPT_LLAMA, "llama-bench", "PATH", "also run this llama.cpp llama-bench in every\n"
	  "repetition (-r 1 -mmp 0 -o jsonl), on the --gguf\n"
	  "files, and compare each pair repetition by\n"
	  "repetition" },
	{ OPT_GGUF, "gguf", "FILE", "the counterpart of the next MODEL (in order,\n"
	  "--synthetic's three first), once per MODEL" },
	{ OPT_RECORD, "record", "FILE", "append JSON lines to FILE (default\n"
	  "bench/results.jsonl when ./bench/ exists)" },
	{ OPT_NO_RECORD, "no-record", NULL, "append nothing" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "bench",
	.usage = "bench MODEL... [-p N] [-n N] [-r N] [-t LIST] [-o md|jsonl|csv] "
		 "[--weights LIST] [--f32-activations] [--bf16-activations] [--synthetic] "
		 "[--membw] [--llama-bench PATH --gguf FILE...] [--record FILE | --no-record]",
	.about = "Measures prefill, time to first token, decode and the sampler on each\n"
		 "MODEL against the memory bandwidth measured in the same run.\n",
	.opts = opts,
	.notes = "Figures are medians with [min, max] over the repetitions. Progress goes\n"
		 "to stderr. Exit status: 0 done, 1 failure, 2 usage.\n",
};

#define MAX_THREADS 64
#define MAX_CONTENDERS 32
#define KERNEL_REPS 50
#define RECORD_DEFAULT "bench/results.jsonl"

enum weights_mode { W_MAPPED, W_COPIED, W_F32, W_N };
static const char *weights_names[W_N] = { "mapped", "copied", "f32" };

static int parse_weights(const char *s, int *modes)
{
	char buf[256];
	if (strlen(s) >= sizeof buf)
		cli_die_usage("--weights: list too long");
	snprintf(buf, sizeof buf, "%s", s);
	int n = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		int m = 0;
		while (m < W_N && strcmp(tok, weights_names[m]))
			m++;
		if (m == W_N)
			cli_die_usage("--weights: '%s' is not mapped, copied or f32", tok);
		if (n < W_N)
			modes[n++] = m;
	}
	if (n == 0)
		cli_die_usage("--weights: empty list");
	return n;
}

/* ---- records ---- */

/* v rounded to 4 significant digits: figures, not noise. */
static double sig4(double v)
{
	char b[32];
	snprintf(b, sizeof b, "%.4g", v);
	return strtod(b, NULL);
}

static void add_num(cJSON *o, const char *k, double v)
{
	cJSON_AddNumberToObject(o, k, sig4(v));
}

static void add_spread(cJSON *o, const char *k, struct spread s)
{
	cJSON *j = cJSON_AddObjectToObject(o, k);
	add_num(j, "median", s.median);
	add_num(j, "min", s.min);
	add_num(j, "max", s.max);
}

/* The spread of f(v[i]) for a decreasing f (a time turned into a rate):
 * the median maps to the median, min and max swap. */
static struct spread spread_rate(struct spread t, double num)
{
	return (struct spread){ .median = num / t.median, .min = num / t.max, .max = num / t.min };
}

static struct spread spread_scale(struct spread s, double k)
{
	return (struct spread){ .median = s.median * k, .min = s.min * k, .max = s.max * k };
}

static cJSON *record(const char *kind, const struct bench_machine *mc, double load)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		cli_die("out of memory");
	cJSON_AddStringToObject(o, "bench", kind);
	cJSON_AddStringToObject(o, "date", mc->date);
	cJSON_AddStringToObject(o, "commit", mc->commit);
	cJSON_AddStringToObject(o, "cpu", mc->cpu);
	cJSON_AddStringToObject(o, "cpu_flags", mc->flags);
	cJSON_AddNumberToObject(o, "cores", mc->cores);
	cJSON_AddStringToObject(o, "kernels", mc->kernels);
	add_num(o, "load1", load);
	return o;
}

/* ---- the contenders ---- */

struct contender {
	struct bench_contender b;
	int path;                     /* which model path: its --gguf counterpart */
	const char *label;            /* "synthetic" or the file's name */
	struct spread kernel_gbs;     /* its matmul kernel's ceiling, one thread */
	char name[128];               /* label, precision (and weights mode) */
	struct bench_rep *reps;       /* [n_threads x reps] */
	struct forward f;
	struct sampler *s;
};

/* The first contender whose kernel ceiling is contender i's: the same type
 * and group size of matrices, the same activations (i itself if none
 * before it). */
static int kernel_twin(const struct contender *cs, int i)
{
	const struct wmat *g = &cs[i].b.m.w.layers[0].gate;
	int j = 0;
	while (j < i && !(cs[j].b.m.w.layers[0].gate.type == g->type &&
			  cs[j].b.m.w.layers[0].gate.group_size == g->group_size &&
			  cs[j].b.act8 == cs[i].b.act8 && cs[j].b.b16act == cs[i].b.b16act))
		j++;
	return j;
}

static const char *base_name(const char *path)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *p = path + n;
	while (p > path && p[-1] != '/')
		p--;
	return p;
}

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
	if (!isatty(STDERR_FILENO))
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("\rbench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\033[K", stderr);
	va_end(ap);
}

static void note_write(void *arg, const char *path)
{
	(void)arg;
	fprintf(stderr, "bench: writing %s\n", path);
}

struct opts {
	int prompt, tokens, reps;
	int threads[MAX_THREADS], n_threads;
	int weights[W_N], n_weights;
	const char *output;
	int synthetic, membw_only, sgemm, f32act, b16act;
	const char *config;
	size_t membw_bytes;
	const char *record;
	const char *llama;                  /* --llama-bench */
	const char *gguf[MAX_CONTENDERS];   /* --gguf, one per model path */
	int n_gguf;
};

/* Resident memory and the warm-up: each model alone, one thread. */
static void measure_open(struct contender *c, const struct opts *o)
{
	struct err e;
	double before = bench_rss_reset();
	if (bench_open(&c->b, &e) < 0 || !(c->s = sampler_new(c->b.m.cfg.vocab_size, &e)))
		cli_die_err(&e);
	struct forward f;
	struct forward_opts fo = { .threads = 1, .ctx = o->prompt + o->tokens + 1,
				   .level = cpu_level_env(NULL), .act8 = c->b.act8,
				   .b16act = c->b.b16act };
	struct bench_rep r;
	if (forward_init(&f, &c->b.m, &fo, &e) < 0 || bench_run(&f, c->s, o->prompt,
								 o->tokens, &r, &e) < 0)
		cli_die("%s: %s", c->b.path, e.msg);
	c->b.rss_mib = bench_rss_peak() - before;
	forward_free(&f);
}

static struct spread rep_spread(const struct contender *c, int ti, int reps,
				   double (*get)(const struct bench_rep *))
{
	double v[reps];
	for (int r = 0; r < reps; r++)
		v[r] = get(&c->reps[ti * reps + r]);
	return spread_of(v, reps);
}

static double get_prefill(const struct bench_rep *r) { return r->prefill_s; }
static double get_ttft(const struct bench_rep *r) { return r->ttft_s; }
static double get_decode(const struct bench_rep *r) { return r->decode_s; }
static double get_sampler(const struct bench_rep *r) { return r->sampler_s; }

/* ---- output ---- */

static void emit_md_header(const struct bench_machine *mc, double load, const struct opts *o,
			   const char *synthetic)
{
	printf("bench %s, commit %s, %s (%s), %d cores, kernels %s, load %.2f\n\n",
	       mc->date, mc->commit, mc->cpu, mc->flags, mc->cores, mc->kernels, load);
	if (synthetic)
		printf("synthetic model: %s (and model.q8, model.q4 there)\n\n", synthetic);
	if (!o->membw_only)
		printf("prompt %d tokens, decode %d tokens, %d repetitions: median "
		       "[min, max]\n\n", o->prompt, o->tokens, o->reps);
}

static void fmt_spread(char *b, size_t cap, struct spread s, int prec)
{
	snprintf(b, cap, "%.*f [%.*f, %.*f]", prec, s.median, prec, s.min, prec, s.max);
}

/* What every contender's record at thread index t was run with. */
static void add_sizes(cJSON *j, const struct opts *o, int t)
{
	cJSON_AddNumberToObject(j, "threads", o->threads[t]);
	cJSON_AddNumberToObject(j, "prompt", o->prompt);
	cJSON_AddNumberToObject(j, "tokens", o->tokens);
	cJSON_AddNumberToObject(j, "reps", o->reps);
}

/* A record of contender c at thread index t: which model, how it ran. */
static cJSON *contender_record(const char *kind, const struct contender *c, int t,
			       const struct opts *o, const struct bench_machine *mc, double load)
{
	cJSON *j = record(kind, mc, load);
	cJSON_AddStringToObject(j, "model", c->b.path);
	cJSON_AddStringToObject(j, "name", c->name);
	cJSON_AddStringToObject(j, "precision", c->b.precision);
	cJSON_AddStringToObject(j, "weights", c->b.weights);
	cJSON_AddBoolToObject(j, "int8_activations", c->b.act8);
	cJSON_AddBoolToObject(j, "bf16_activations", c->b.b16act);
	add_sizes(j, o, t);
	return j;
}

static cJSON *model_record(const struct contender *c, const struct contender *first,
			  int t, const struct opts *o, const struct membw *bw,
			  const struct bench_machine *mc, double load)
{
	int R = o->reps;
	cJSON *j = contender_record("model", c, t, o, mc, load);
	cJSON_AddNumberToObject(j, "bytes_per_token", (double)c->b.bytes_per_token);
	add_num(j, "open_s", c->b.open_s);
	add_num(j, "rss_mib", c->b.rss_mib);
	struct spread dec = rep_spread(c, t, R, get_decode);
	add_spread(j, "prefill_tok_s",
		   spread_rate(rep_spread(c, t, R, get_prefill), o->prompt));
	add_spread(j, "ttft_ms", spread_scale(rep_spread(c, t, R, get_ttft), 1e3));
	add_spread(j, "decode_ms", spread_scale(dec, 1e3));
	add_spread(j, "decode_tok_s", spread_rate(dec, 1));
	add_spread(j, "sampler_us", spread_scale(rep_spread(c, t, R, get_sampler), 1e6));
	double bps = bw->gbs.max * 1e9;
	add_num(j, "membw_gbs", bw->gbs.max);
	add_num(j, "limit_tok_s", bps / (double)c->b.bytes_per_token);
	add_spread(j, "fraction_of_limit", spread_rate(dec, (double)c->b.bytes_per_token / bps));
	/* What the kernel allows: threads x its ceiling, against the bandwidth. */
	add_num(j, "kernel_gbs", c->kernel_gbs.max);
	double bound = o->threads[t] * c->kernel_gbs.max / bw->gbs.max;
	add_num(j, "fraction_kernel_bound", bound < 1 ? bound : 1);
	if (c != first) {
		/* Matched pairs: repetition r of c against repetition r of the first. */
		double ratio[R];
		int dwins = 0, pwins = 0;
		for (int r = 0; r < R; r++) {
			const struct bench_rep *a = &first->reps[t * R + r], *b = &c->reps[t * R + r];
			dwins += b->decode_s < a->decode_s;
			pwins += b->prefill_s < a->prefill_s;
			ratio[r] = a->decode_s / b->decode_s;
		}
		cJSON_AddStringToObject(j, "vs", first->name);
		cJSON_AddNumberToObject(j, "decode_wins", dwins);
		cJSON_AddNumberToObject(j, "prefill_wins", pwins);
		add_spread(j, "decode_speedup", spread_of(ratio, R));
	}
	return j;
}

/* ---- against llama-bench ---- */

static void add_array(cJSON *o, const char *k, const double *v, int n)
{
	cJSON *a = cJSON_AddArrayToObject(o, k);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(sig4(v[i])));
}

/* K_reps, the values of the n repetitions in their order, and K, their
 * spread. */
static void add_reps(cJSON *o, const char *k, const double *v, int n)
{
	char key[64];
	snprintf(key, sizeof key, "%s_reps", k);
	add_array(o, key, v, n);
	double sorted[n];
	memcpy(sorted, v, sizeof sorted);
	add_spread(o, k, spread_of(sorted, n));
}

/* llama-bench's result for GGUF file g in repetition r at thread index t. */
static struct llama_result *llama_at(struct llama_result *lr, const struct opts *o, int t,
				     int r, int g)
{
	return &lr[((size_t)t * o->reps + r) * o->n_gguf + g];
}

/* "bench":"llama": GGUF file g at thread index t, tokens/s per repetition. */
static cJSON *llama_record(int g, int t, const struct opts *o, struct llama_result *lr,
			   const struct bench_machine *mc, double load)
{
	int R = o->reps;
	double pf[R], dc[R];
	for (int r = 0; r < R; r++) {
		pf[r] = llama_at(lr, o, t, r, g)->prefill_tok_s;
		dc[r] = llama_at(lr, o, t, r, g)->decode_tok_s;
	}
	cJSON *j = record("llama", mc, load);
	cJSON_AddStringToObject(j, "model", o->gguf[g]);
	cJSON_AddStringToObject(j, "model_type", llama_at(lr, o, t, 0, g)->model_type);
	cJSON_AddStringToObject(j, "llama_bench", o->llama);
	cJSON_AddStringToObject(j, "build", llama_at(lr, o, t, 0, g)->build);
	add_sizes(j, o, t);
	add_reps(j, "prefill_tok_s", pf, R);
	add_reps(j, "decode_tok_s", dc, R);
	return j;
}

/* "bench":"vs_llama": contender c against its model's GGUF file at thread
 * index t, repetition by repetition: ours / llama.cpp's tokens/s, and in
 * how many repetitions ours was faster. */
static cJSON *vs_llama_record(const struct contender *c, int t, const struct opts *o,
			      struct llama_result *lr, const struct bench_machine *mc,
			      double load)
{
	int R = o->reps, g = c->path, pwins = 0, dwins = 0;
	double op[R], od[R], lp[R], ld[R], rp[R], rd[R];
	for (int r = 0; r < R; r++) {
		const struct bench_rep *b = &c->reps[t * R + r];
		op[r] = o->prompt / b->prefill_s;
		od[r] = 1 / b->decode_s;
		lp[r] = llama_at(lr, o, t, r, g)->prefill_tok_s;
		ld[r] = llama_at(lr, o, t, r, g)->decode_tok_s;
		rp[r] = op[r] / lp[r];
		rd[r] = od[r] / ld[r];
		pwins += op[r] > lp[r];
		dwins += od[r] > ld[r];
	}
	cJSON *j = contender_record("vs_llama", c, t, o, mc, load);
	cJSON_AddStringToObject(j, "gguf", o->gguf[g]);
	cJSON_AddStringToObject(j, "gguf_type", llama_at(lr, o, t, 0, g)->model_type);
	add_reps(j, "ours_prefill_tok_s", op, R);
	add_reps(j, "llama_prefill_tok_s", lp, R);
	add_reps(j, "prefill_ratio", rp, R);
	cJSON_AddNumberToObject(j, "prefill_wins", pwins);
	add_reps(j, "ours_decode_tok_s", od, R);
	add_reps(j, "llama_decode_tok_s", ld, R);
	add_reps(j, "decode_ratio", rd, R);
	cJSON_AddNumberToObject(j, "decode_wins", dwins);
	return j;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static struct spread get_spread(const cJSON *o, const char *k)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, k);
	return (struct spread){ .median = num(s, "median"), .min = num(s, "min"),
				.max = num(s, "max") };
}

static void report_md(cJSON **recs, int n)
{
	int header = 0;
	for (int i = 0; i < n; i++) {
		const cJSON *j = recs[i];
		const char *kind = str(j, "bench");
		if (!strcmp(kind, "kernel")) {
			printf("%s matmul kernel, one thread, %dx%d in cache: %.1f GB/s of weights "
			       "(best of %d; median %.1f)\n", str(j, "precision"), (int)num(j, "rows"),
			       (int)num(j, "cols"), get_spread(j, "gbs").max, (int)num(j, "reps"),
			       get_spread(j, "gbs").median);
			continue;
		}
		if (!strcmp(kind, "membw")) {
			printf("memory read bandwidth, %d thread%s: %.1f GB/s (best of %d passes "
			       "over %.0f MiB; median %.1f)\n", (int)num(j, "threads"), num(j, "threads") > 1 ? "s" : "",
			       get_spread(j, "gbs").max, (int)num(j, "passes"),
			       num(j, "bytes") / (1 << 20), get_spread(j, "gbs").median);
			continue;
		}
		if (strcmp(kind, "model") && strcmp(kind, "sgemm"))
			continue;
		if (!header++)
			printf("\n| model | threads | prefill tok/s | TTFT ms | decode ms/token | "
			       "decode tok/s | of limit [of kernel bound] | vs first (wins) | open s | RSS MiB | "
			       "sampler us/token |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
		char pf[64], tt[64], dm[64], dt[64], fr[64], vs[64] = "";
		fmt_spread(pf, sizeof pf, get_spread(j, "prefill_tok_s"), 1);
		if (!strcmp(kind, "sgemm")) {
			printf("| OpenBLAS sgemm (%s), f32 shapes | %d | %s | | | | | | | | |\n",
			       str(j, "openblas"), (int)num(j, "threads"), pf);
			continue;
		}
		fmt_spread(tt, sizeof tt, get_spread(j, "ttft_ms"), 1);
		fmt_spread(dm, sizeof dm, get_spread(j, "decode_ms"), 2);
		fmt_spread(dt, sizeof dt, get_spread(j, "decode_tok_s"), 1);
		struct spread f = get_spread(j, "fraction_of_limit");
		snprintf(fr, sizeof fr, "%.0f%% [%.0f, %.0f] of %.0f%%", 100 * f.median,
			 100 * f.min, 100 * f.max, 100 * num(j, "fraction_kernel_bound"));
		if (cJSON_GetObjectItemCaseSensitive(j, "vs"))
			snprintf(vs, sizeof vs, "%.2fx (%d/%d)", get_spread(j, "decode_speedup").median,
				 (int)num(j, "decode_wins"), (int)num(j, "reps"));
		printf("| %s | %d | %s | %s | %s | %s | %s | %s | %.2f | %.0f | %.1f |\n",
		       str(j, "name"), (int)num(j, "threads"), pf, tt, dm, dt, fr, vs,
		       num(j, "open_s"), num(j, "rss_mib"), get_spread(j, "sampler_us").median);
	}
}

/* The vs_llama records as one table: median tokens/s of each engine, the
 * median of the per-repetition ratios, and ours' wins. */
static void report_md_llama(cJSON **recs, int n, const struct opts *o)
{
	int header = 0;
	for (int i = 0; i < n; i++) {
		const cJSON *j = recs[i];
		if (strcmp(str(j, "bench"), "vs_llama"))
			continue;
		if (!header++)
			printf("\nagainst llama.cpp (%s, -mmp 0), in the same repetitions: median "
			       "tokens/s, the median of the per-repetition ratios ours / "
			       "llama.cpp, and in how many of the %d ours was faster\n\n"
			       "| ours | llama.cpp | threads | prefill tok/s ours / llama.cpp | "
			       "ratio (wins) | decode tok/s ours / llama.cpp | ratio (wins) |\n"
			       "|---|---|--:|--:|--:|--:|--:|\n", o->llama, o->reps);
		printf("| %s | %s (%s) | %d | %.1f / %.1f | %.2fx (%d/%d) | %.1f / %.1f | "
		       "%.2fx (%d/%d) |\n", str(j, "name"), base_name(str(j, "gguf")),
		       str(j, "gguf_type"), (int)num(j, "threads"),
		       get_spread(j, "ours_prefill_tok_s").median,
		       get_spread(j, "llama_prefill_tok_s").median,
		       get_spread(j, "prefill_ratio").median, (int)num(j, "prefill_wins"),
		       (int)num(j, "reps"), get_spread(j, "ours_decode_tok_s").median,
		       get_spread(j, "llama_decode_tok_s").median,
		       get_spread(j, "decode_ratio").median, (int)num(j, "decode_wins"),
		       (int)num(j, "reps"));
	}
}

/* A CSV field: quoted, quotes doubled (RFC 4180). */
static void csv_string(const char *v)
{
	putchar('"');
	for (; *v; v++) {
		if (*v == '"')
			putchar('"');
		putchar(*v);
	}
	putchar('"');
}

/* One row per model record: strings, numbers and booleans as they are,
 * each spread as KEY_median, KEY_min, KEY_max; the columns of the first. */
static void report_csv(cJSON **recs, int n)
{
	int header = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(str(recs[i], "bench"), "model"))
			continue;
		for (int pass = header++ ? 1 : 0; pass < 2; pass++) {
			int col = 0;
			for (const cJSON *v = recs[i]->child; v; v = v->next) {
				static const char *sub[3] = { "median", "min", "max" };
				for (int s = 0; s < (cJSON_IsObject(v) ? 3 : 1); s++) {
					fputs(col++ ? "," : "", stdout);
					if (pass == 0)
						printf(cJSON_IsObject(v) ? "%s_%s" : "%s", v->string,
						       sub[s]);
					else if (cJSON_IsObject(v))
						printf("%.17g", num(v, sub[s]));
					else if (cJSON_IsNumber(v))
						printf("%.17g", v->valuedouble);
					else if (cJSON_IsBool(v))
						fputs(cJSON_IsTrue(v) ? "true" : "false", stdout);
					else
						csv_string(v->valuestring);
				}
			}
			putchar('\n');
		}
	}
}

int main(int argc, char **argv)
{
	struct opts o = {
		.prompt = 64,       /* -p: prompt tokens */
		.tokens = 64,       /* -n: decoded tokens per repetition */
		.reps = 10,         /* -r: repetitions after the warm-up */
		.output = "md",     /* -o */
		.sgemm = 1,         /* the OpenBLAS reference */
		.config = SYNTHETIC_CONFIG,
		.membw_bytes = MEMBW_BYTES_DEFAULT,
	};
	int no_record = 0;
	cli_init(&spec);
	const char *v;
	int c;
	while ((c = cli_getopt(argc, argv, &v)) != -1) {
		switch (c) {
		case 'p': o.prompt = (int)cli_flag_long("--prompt", v, 1, 4096); break;
		case 'n': o.tokens = (int)cli_flag_long("--tokens", v, 1, 4096); break;
		case 'r': o.reps = (int)cli_flag_long("--reps", v, 1, 1000); break;
		case 't': {
			long t[MAX_THREADS];
			struct err e;
			if (parse_long_list(v, 1, 256, t, MAX_THREADS, &o.n_threads, &e) < 0)
				cli_die_usage("--threads: %s", e.msg);
			for (int i = 0; i < o.n_threads; i++)
				o.threads[i] = (int)t[i];
			break;
		}
		case 'o':
			if (strcmp(v, "md") && strcmp(v, "jsonl") && strcmp(v, "csv"))
				cli_die_usage("--output: '%s' is not md, jsonl or csv", v);
			o.output = v;
			break;
		case 'w': o.n_weights = parse_weights(v, o.weights); break;
		case OPT_ACT8: break;
		case OPT_F32ACT: o.f32act = 1; break;
		case OPT_B16ACT: o.b16act = 1; break;
		case OPT_SYNTH: o.synthetic = 1; break;
		case OPT_CONFIG: o.config = v; break;
		case OPT_MEMBW: o.membw_only = 1; break;
		case OPT_MEMBW_MIB:
			o.membw_bytes = (size_t)cli_flag_long("--membw-mib", v, 1, 1 << 20) << 20;
			break;
		case OPT_NO_SGEMM: o.sgemm = 0; break;
		case OPT_RECORD: o.record = v; break;
		case OPT_NO_RECORD: no_record = 1; break;
		case OPT_LLAMA: o.llama = v; break;
		case OPT_GGUF:
			if (o.n_gguf == MAX_CONTENDERS)
				cli_die_usage("--gguf: more than %d files", MAX_CONTENDERS);
			o.gguf[o.n_gguf++] = v;
			break;
		}
	}
	int n_models = argc - optind;
	if (o.membw_only && (n_models > 0 || o.synthetic))
		cli_die_usage("--membw: measures bandwidth only, without MODEL or --synthetic");
	if (!o.membw_only && !o.synthetic && n_models == 0)
		cli_die_usage("missing MODEL (or --synthetic, --membw)");
	if (no_record && o.record)
		cli_die_usage("--record and --no-record");
	if (o.llama && o.n_gguf == 0)
		cli_die_usage("--llama-bench: needs the models' GGUF files (--gguf FILE, one per MODEL)");
	if (o.n_gguf && !o.llama)
		cli_die_usage("--gguf: needs --llama-bench PATH");
	if (o.llama && o.membw_only)
		cli_die_usage("--membw: measures bandwidth only, without --llama-bench");
	if (o.llama && access(o.llama, X_OK) != 0)
		cli_die("--llama-bench: %s: %m", o.llama);
	for (int g = 0; g < o.n_gguf; g++)
		if (access(o.gguf[g], R_OK) != 0)
			cli_die("--gguf: %s: %m", o.gguf[g]);
	if (o.n_threads == 0) {
		o.threads[o.n_threads++] = 1;
		if (cpu_cores() > 1)
			o.threads[o.n_threads++] = cpu_cores();
	}
	if (o.n_weights == 0)
		o.weights[o.n_weights++] = W_COPIED;  /* model_load's default */
	struct stat st;
	if (!no_record && !o.record) {
		if (stat("bench", &st) == 0 && S_ISDIR(st.st_mode))
			o.record = RECORD_DEFAULT;
		else
			fprintf(stderr, "bench: not recording: no ./bench/ directory here "
				"(--record FILE to choose one)\n");
	}
	FILE *rec = NULL;
	if (o.record && !(rec = fopen(o.record, "a")))
		cli_die("%s: %m", o.record);
	struct err e;

	/* The contenders: the synthetic models first, then MODEL..., each
	 * with each weights mode (f32 only for safetensors models). */
	struct synthetic syn;
	const char *paths[MAX_CONTENDERS];
	const char *labels[MAX_CONTENDERS];
	int np = 0;
	if (o.synthetic) {
		if (synthetic_ensure(&syn, o.config, note_write, NULL, &e) < 0)
			cli_die_err(&e);
		paths[np] = syn.dir, labels[np++] = "synthetic";
		paths[np] = syn.q8, labels[np++] = "synthetic";
		paths[np] = syn.q4, labels[np++] = "synthetic";
	}
	for (int i = optind; i < argc; i++) {
		if (np == MAX_CONTENDERS)
			cli_die_usage("more than %d models", MAX_CONTENDERS);
		paths[np] = argv[i], labels[np++] = NULL;
	}
	if (o.llama && o.n_gguf != np)
		cli_die_usage("--gguf: %d file%s for %d model%s (one per MODEL, in order; "
			  "--synthetic's three first)", o.n_gguf, o.n_gguf == 1 ? "" : "s", np,
			  np == 1 ? "" : "s");
	struct contender *cs = calloc((size_t)np * W_N * 2 + 1, sizeof *cs);
	if (!cs)
		cli_die("out of memory");
	int nc = 0, n_f32 = 0, n_b16 = 0;
	for (int i = 0; i < np; i++)
		for (int w = 0; w < o.n_weights; w++) {
			struct modelpath mp;
			int resolved = modelpath_resolve(&mp, paths[i], &e) == 0;
			int container = resolved && mp.kind == MODELPATH_CONTAINER;
			int gguf = resolved && mp.kind == MODELPATH_GGUF;
			if (o.weights[w] == W_F32 && container) {
				fprintf(stderr, "bench: %s: a container cannot be widened to "
					"f32; skipped for --weights f32\n", paths[i]);
				continue;
			}
			/* Containers and GGUF files hold the integer
			 * matrices: with --f32-activations, a twin that runs
			 * them with float32 activations. A bf16 model (not
			 * widened), with --bf16-activations: a twin with bf16
			 * activations. */
			int twin = container || gguf ? o.f32act
				 : o.b16act && o.weights[w] != W_F32;
			for (int a = 0; a <= twin; a++) {
				struct contender *k = &cs[nc++];
				k->path = i;
				k->b.path = paths[i];
				k->label = labels[i] ? labels[i] : base_name(paths[i]);
				k->b.mo.mmap = o.weights[w] == W_MAPPED;
				k->b.mo.f32 = o.weights[w] == W_F32;
				k->b.f32act = a && (container || gguf);
				k->b.b16act = a && !container && !gguf;
				n_f32 += k->b.f32act;
				n_b16 += k->b.b16act;
			}
		}
	if (o.b16act && n_b16 == 0)
		cli_die_usage("--bf16-activations: no bf16 model among the models (a "
			  "safetensors model, not --weights f32 only)");
	if (o.f32act && n_f32 == 0)
		cli_die_usage("--f32-activations: no int8 or int4 container or GGUF file among "
			  "the models (quantize one, or --synthetic)");

	struct bench_machine mc;
	bench_machine(&mc);
	double load = bench_loadavg();

	/* Open each model alone: open time, resident memory, warm-up. */
	for (int i = 0; i < nc; i++) {
		progress("opening %s", cs[i].b.path);
		measure_open(&cs[i], &o);
		snprintf(cs[i].name, sizeof cs[i].name, "%s %s%s%s%s", cs[i].label,
			 cs[i].b.precision,
			 cs[i].b.f32act ? "+f32" : cs[i].b.b16act ? "+b16" : "",
			 o.n_weights > 1 ? " " : "", o.n_weights > 1 ? cs[i].b.weights : "");
		cs[i].reps = calloc((size_t)(o.n_threads * o.reps), sizeof *cs[i].reps);
		if (!cs[i].reps)
			cli_die("out of memory");
	}

	/* Bandwidth at every thread count, in this run. */
	struct membw bw[MAX_THREADS];
	for (int t = 0; t < o.n_threads; t++) {
		progress("memory bandwidth, %d threads", o.threads[t]);
		if (membw_measure(&bw[t], o.threads[t], o.membw_bytes, MEMBW_REPS_DEFAULT,
				  &e) < 0)
			cli_die_err(&e);
	}

	/* The kernels' ceilings, one per kind of matrix (type and group size,
	 * bench_kernel_gbs) and activations, on a hidden x hidden matrix of the
	 * first model's shape; a contender like an earlier one shares its
	 * figure. */
	const struct kernels *kern = kernels_for(cpu_level_env(NULL));
	for (int i = 0; i < nc; i++) {
		const struct wmat *g = &cs[i].b.m.w.layers[0].gate;
		int j = kernel_twin(cs, i);
		if (j < i) {
			cs[i].kernel_gbs = cs[j].kernel_gbs;
			continue;
		}
		progress("kernel ceiling, %s%s", cs[i].b.precision,
			 cs[i].b.f32act ? "+f32" : cs[i].b.b16act ? "+b16" : "");
		if (bench_kernel_gbs(kern, g, cs[i].b.act8, cs[i].b.b16act,
				     cs[0].b.m.cfg.hidden_size, cs[0].b.m.cfg.hidden_size,
				     KERNEL_REPS, &cs[i].kernel_gbs, &e) < 0)
			cli_die_err(&e);
	}

	/* For each thread count, the repetitions, alternating the contenders. */
	double *sgemm = calloc((size_t)(o.n_threads * o.reps), sizeof *sgemm);
	struct llama_result *lr = calloc((size_t)(o.n_threads * o.reps * o.n_gguf) + 1,
					 sizeof *lr);
	if (!sgemm || !lr)
		cli_die("out of memory");
	for (int t = 0; t < o.n_threads && nc > 0; t++) {
		struct forward_opts fo = { .threads = o.threads[t],
					   .ctx = o.prompt + o.tokens + 1,
					   .level = cpu_level_env(NULL) };
		struct bench_rep warm;
		for (int i = 0; i < nc; i++) {
			fo.act8 = cs[i].b.act8;
			fo.b16act = cs[i].b.b16act;
			if (forward_init(&cs[i].f, &cs[i].b.m, &fo, &e) < 0 ||
			    bench_run(&cs[i].f, cs[i].s, o.prompt, o.tokens, &warm, &e) < 0)
				cli_die("%s: %s", cs[i].b.path, e.msg);
		}
		for (int r = 0; r < o.reps; r++) {
			progress("%d threads, repetition %d of %d", o.threads[t], r + 1, o.reps);
			/* One untimed token first: it reads every weight once, so
			 * what the host paged out during llama-bench's run is back
			 * (the first contender after it prefilled at half speed
			 * without; llama-bench warms up each run too). */
			for (int i = 0; i < nc; i++)
				if ((o.llama && bench_run(&cs[i].f, cs[i].s, 1, 1, &warm, &e) < 0) ||
				    bench_run(&cs[i].f, cs[i].s, o.prompt, o.tokens,
					      &cs[i].reps[t * o.reps + r], &e) < 0)
					cli_die("%s: %s", cs[i].b.path, e.msg);
			if (o.llama && llama_bench_run(o.llama, o.gguf, o.n_gguf, o.prompt,
						       o.tokens, o.threads[t],
						       llama_at(lr, &o, t, r, 0),
						       &e) < 0)
				cli_die_err(&e);
		}
		for (int i = 0; i < nc; i++)
			forward_free(&cs[i].f);
		if (o.sgemm) {
			progress("OpenBLAS sgemm, %d threads", o.threads[t]);
			if (bench_sgemm_prefill(&cs[0].b.m.cfg, o.prompt, o.threads[t], o.reps,
						sgemm + t * o.reps, &e) < 0)
				cli_die_err(&e);
		}
	}
	if (isatty(STDERR_FILENO))
		fputs("\r\033[K", stderr);

	/* The records, then the report. */
	int nrec = o.n_threads * (1 + nc + (o.sgemm && nc > 0) + (o.llama ? o.n_gguf + nc : 0)) + 8;
	cJSON **recs = calloc((size_t)nrec, sizeof *recs);
	if (!recs)
		cli_die("out of memory");
	int k = 0;
	for (int t = 0; t < o.n_threads; t++) {
		cJSON *j = recs[k++] = record("membw", &mc, load);
		cJSON_AddNumberToObject(j, "threads", o.threads[t]);
		cJSON_AddNumberToObject(j, "bytes", (double)bw[t].bytes);
		cJSON_AddNumberToObject(j, "passes", bw[t].reps);
		add_spread(j, "gbs", bw[t].gbs);
	}
	for (int i = 0; i < nc; i++) {
		if (kernel_twin(cs, i) < i)
			continue;
		char p[32];
		snprintf(p, sizeof p, "%s%s%s", cs[i].b.precision,
			 cs[i].b.m.w.layers[0].gate.type == WT_Q8 &&
			 cs[i].b.m.w.layers[0].gate.group_size ? " (groups)" : "",
			 cs[i].b.f32act ? "+f32" : cs[i].b.b16act ? "+b16" : "");
		cJSON *j = recs[k++] = record("kernel", &mc, load);
		cJSON_AddStringToObject(j, "precision", p);
		cJSON_AddNumberToObject(j, "rows", cs[0].b.m.cfg.hidden_size);
		cJSON_AddNumberToObject(j, "cols", cs[0].b.m.cfg.hidden_size);
		cJSON_AddNumberToObject(j, "reps", KERNEL_REPS);
		add_spread(j, "gbs", cs[i].kernel_gbs);
	}
	for (int t = 0; t < o.n_threads; t++) {
		for (int i = 0; i < nc; i++)
			recs[k++] = model_record(&cs[i], &cs[0], t, &o, &bw[t], &mc, load);
		if (o.sgemm && nc > 0) {
			cJSON *j = recs[k++] = record("sgemm", &mc, load);
			cJSON_AddStringToObject(j, "shapes", cs[0].b.path);
			cJSON_AddStringToObject(j, "openblas", openblas_get_corename());
			cJSON_AddNumberToObject(j, "threads", o.threads[t]);
			cJSON_AddNumberToObject(j, "prompt", o.prompt);
			add_spread(j, "prefill_tok_s",
				   spread_rate(spread_of(sgemm + t * o.reps, o.reps), o.prompt));
		}
		if (o.llama) {
			for (int g = 0; g < o.n_gguf; g++)
				recs[k++] = llama_record(g, t, &o, lr, &mc, load);
			for (int i = 0; i < nc; i++)
				recs[k++] = vs_llama_record(&cs[i], t, &o, lr, &mc, load);
		}
	}
	for (int i = 0; i < k; i++) {
		char *line = cJSON_PrintUnformatted(recs[i]);
		if (!line)
			cli_die("out of memory");
		if (rec && fprintf(rec, "%s\n", line) < 0)
			cli_die("%s: write error", o.record);
		if (!strcmp(o.output, "jsonl"))
			printf("%s\n", line);
		free(line);
	}
	if (rec && (fflush(rec) != 0 || ferror(rec) || fclose(rec) != 0))
		cli_die("%s: write error", o.record);
	if (!strcmp(o.output, "md")) {
		emit_md_header(&mc, load, &o, o.synthetic ? syn.dir : NULL);
		report_md(recs, k);
		report_md_llama(recs, k, &o);
	}
	else if (!strcmp(o.output, "csv"))
		report_csv(recs, k);
	for (int i = 0; i < k; i++)
		cJSON_Delete(recs[i]);
	for (int i = 0; i < nc; i++) {
		sampler_free(cs[i].s);
		model_free(&cs[i].b.m);
		free(cs[i].reps);
	}
	free(recs);
	free(sgemm);
	free(lr);
	free(cs);
	cli_exit(0);
}
