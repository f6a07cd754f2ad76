/* ppl: perplexity of a model at several precisions, side by side with
 * float32.
 *
 *   ppl MODEL [CONTAINER...] [--level fp32,bf16,int8,int4] [--chunk 256]
 *       [--text FILE | --ids FILE] [--json]
 *
 * Each level is the safetensors MODEL loaded as float32, as bf16, or
 * quantized in memory (lib/model/qmodel.h: the same code as `quantize`); an
 * int level runs as forward runs it by default (int8 activations,
 * lib/model/forward.h), or with float32 activations for +f32, and bf16
 * matrices with bf16 activations for +b16; each CONTAINER (.q8, .q4 or
 * .gguf) is one more level, run as forward runs it by default. Every level runs side by
 * side with the float32 model (lib/model/ppl.h), which gives the KL divergence
 * and top-1 agreement without writing any logits anywhere.
 */
#include "cli/cli.h"
#include "cli/datadir.h"
#include "format/idtext.h"
#include "format/modelpath.h"
#include "model/forward.h"
#include "model/model.h"
#include "core/parse.h"
#include "core/slurp.h"
#include "model/ppl.h"
#include "format/qfile.h"
#include "model/qmodel.h"
#include "kernels/quant.h"
#include "text/tokenizer.h"
#include "format/modelfile.h"

#include <cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_MAX_CHUNKS = CLI_LONG, OPT_NO_COMPARE };

static const struct cli_opt opts[] = {
	{ 0, "MODEL", NULL, "a safetensors model directory (or a container, alone)" },
	{ 0, "CONTAINER", NULL, "a .q8 / .q4 from quantize, or a GGUF file\n"
	  "(llama.cpp's): one more level, as stored; a GGUF\n"
	  "file named with +f32 after it (FILE.gguf+f32) runs\n"
	  "with float32 activations (the exact mode)" },
	{ 'l', "level", "LIST", "comma-separated, from fp32, bf16, int8, int4,\n"
	  "int4-rtn (the round-to-nearest baseline), each int\n"
	  "level optionally with +embed (the embeddings too)\n"
	  "and the activations: int8 by default, as forward\n"
	  "runs them (+a8 says so explicitly), or +f32 (the\n"
	  "exact mode, forward --f32-activations), e.g.\n"
	  "int4+embed+f32; bf16 and the int levels with +b16\n"
	  "(bf16 activations for the bf16 matrices, forward\n"
	  "--bf16-activations) (default fp32,bf16,int8,int4);\n"
	  "a CONTAINER runs as forward runs it by default" },
	{ 'c', "chunk|ctx-size", "LIST", "tokens per chunk (the context of each run), one\n"
	  "or more (default 256)" },
	{ 'g', "group-size", "N", "int4 group size (default 32)" },
	{ 'f', "text|file", "FILE", "the text, tokenized with the model's tokenizer\n"
	  "(default: the bundled data/shakespeare-tiny/heldout.txt)" },
	{ 'i', "ids", "FILE", "token ids instead of text ('-': stdin)" },
	{ OPT_MAX_CHUNKS, "max-chunks|chunks", "N", "only the first N chunks" },
	{ 't', "threads", "N", "worker threads (default: the physical cores)" },
	{ OPT_NO_COMPARE, "no-compare", NULL, "no float32 run beside each level: no KL, no top-1,\n"
	  "delta only against an fp32 level in the list; half\n"
	  "the time" },
	{ 'j', "json", NULL, "one JSON object on stdout instead of the table" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "ppl",
	.usage = "ppl MODEL [CONTAINER...] [--level LIST] [--chunk LIST] [--group-size N] "
		 "[--text FILE | --ids FILE] [--max-chunks N] [--threads N] [--no-compare] "
		 "[--json]",
	.about = "Measures perplexity at several precisions, each beside float32.\n",
	.opts = opts,
	.notes = "Protocol (tests/golden/README.md): non-overlapping chunks of --chunk\n"
		 "tokens from the start of the text, a partial last chunk dropped, each\n"
		 "chunk from an empty cache, every token but the first of a chunk scored,\n"
		 "NLL summed in float64; ppl = exp(NLL / scored). Mean KL is\n"
		 "KL(fp32 || level) over the scored positions; top-1 is how often the two\n"
		 "argmaxes agree; time is the level's own forward passes. Progress goes\n"
		 "to stderr. The same command gives the same digits (time aside).\n",
};

#define MAX_LEVELS 16
#define MAX_CHUNKS 8
#define BUNDLED_TEXT "shakespeare-tiny/heldout.txt"
#define BUNDLED_TOKENIZER "qwen2.5-0.5b-instruct/tokenizer.json"

enum kind { LV_FP32, LV_BF16, LV_QUANT, LV_FILE };

struct level {
	char name[96];
	enum kind kind;
	struct qscheme qs;
	int act8;          /* +a8 (the default of the int levels, said explicitly) */
	int f32act;        /* +f32 */
	int b16act;        /* +b16 */
	const char *path;  /* LV_FILE */
};

static int parse_level(const char *s, int group, struct level *l)
{
	memset(l, 0, sizeof *l);
	snprintf(l->name, sizeof l->name, "%s", s);
	if (!strcmp(s, "fp32")) {
		l->kind = LV_FP32;
		return 0;
	}
	if (!strcmp(s, "bf16") || !strcmp(s, "bf16+b16")) {
		l->kind = LV_BF16;
		l->b16act = s[4] != 0;
		return 0;
	}
	static const char *const q[] = { "int8", "int4", "int4-rtn" };
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(q[i]);
		if (strncmp(s, q[i], n) != 0 || (s[n] && s[n] != '+'))
			continue;
		l->kind = LV_QUANT;
		l->qs = (struct qscheme){ .type = i ? WT_Q4 : WT_Q8, .group_size = i ? group : 0,
					  .rtn = i == 2 };
		/* Suffixes, each at most once, in any order. */
		for (const char *p = s + n; *p;) {
			if (!strncmp(p, "+embed", 6) && !l->qs.embeddings) {
				l->qs.embeddings = true;
				p += 6;
			} else if (!strncmp(p, "+a8", 3) && !l->act8 && !l->f32act) {
				l->act8 = 1;
				p += 3;
			} else if (!strncmp(p, "+f32", 4) && !l->act8 && !l->f32act) {
				l->f32act = 1;
				p += 4;
			} else if (!strncmp(p, "+b16", 4) && !l->b16act) {
				l->b16act = 1;
				p += 4;
			} else {
				return -1;
			}
		}
		return 0;
	}
	return -1;
}

/* All of path ("-": stdin), or exit 1 naming it. */
static char *read_all(const char *path, size_t *len)
{
	struct err e;
	char *text = slurp(path, len, &e);
	if (!text)
		cli_die_err(&e);
	return text;
}

/* The ids of path (lib/format/idtext.h; "-": stdin), or exit 1 naming
 * the line. The model checks them against its vocabulary. */
static int *read_ids(const char *path, long *n)
{
	size_t len;
	struct err e;
	char *text = read_all(path, &len);
	int *ids = idtext_parse(text, len, strcmp(path, "-") ? path : "<stdin>", INT_MAX, n, &e);
	free(text);
	if (!ids)
		cli_die_err(&e);
	return ids;
}

/* The text's ids under the tokenizer.json of tok_path: a file, a model
 * directory, or a container (its embedded copy, lib/format/modelfile.h). */
static int *tokenize(const char *text_path, const char *tok_path, long *n)
{
	struct err e;
	struct model_file f;
	if (model_file_open(&f, tok_path, "tokenizer.json", &e) < 0)
		cli_die_err(&e);
	struct tokenizer *t = tok_parse(f.data, f.size, f.name, &e);
	model_file_close(&f);
	if (!t)
		cli_die_err(&e);
	size_t len;
	char *text = read_all(text_path, &len);
	struct idvec iv = { 0 };
	if (tok_encode(t, (const unsigned char *)text, len, 0, &iv, NULL, &e) < 0)
		cli_die_err(&e);
	free(text);
	tok_free(t);
	*n = (long)iv.n;
	return iv.v;
}

static void progress(void *arg, int done, int total)
{
	fprintf(stderr, "\rppl: %s %d/%d", (const char *)arg, done, total);
	if (done == total)
		fputc('\n', stderr);
}

/* Loads the level's model; returns whether it runs with int8 activations. */
static int load(struct model *m, const char *path, const struct level *l)
{
	struct model_opts o = { .f32 = l->kind == LV_FP32 };
	struct err e;
	int act8;
	if (model_load(m, path, &o, &e) < 0 ||
	    (l->kind == LV_QUANT && model_quantize(m, &l->qs, &e) < 0) ||
	    (act8 = forward_act8_prepare(m, l->f32act, &e)) < 0 ||
	    (l->b16act && model_tile_b16(m, &e) < 0))
		cli_die_err(&e);
	return act8;
}

static void start(struct forward *f, const struct model *m, int ctx, int threads,
		  const struct level *l, int act8)
{
	struct forward_opts o = { .threads = threads, .ctx = ctx, .level = cpu_level_env(NULL),
				  .act8 = act8, .b16act = l->b16act };
	struct err e;
	if (forward_init(f, m, &o, &e) < 0)
		cli_die_err(&e);
}

struct row {
	const struct level *l;
	size_t bytes;
	struct ppl_stats s;
	double ref_ppl;   /* fp32 at the same chunk, or 0 when there is none */
	bool self;        /* the fp32 level itself */
};

/* Delta, mean KL and top-1 of a row: false when there is nothing to
 * compare with. */
static bool versus(const struct row *r, double *delta, double *kl, double *top1)
{
	if (r->ref_ppl == 0)
		return false;
	*delta = 100 * (r->s.ppl / r->ref_ppl - 1);
	*kl = r->s.compared ? r->s.kl_sum / (double)r->s.compared : 0;
	*top1 = r->s.compared ? (double)r->s.agree / (double)r->s.compared : 1;
	return r->s.compared || r->self;
}

static void print_table(const struct row *rows, int n)
{
	printf("%-16s %6s %14s %11s %9s %10s %8s %9s\n", "level", "chunk", "weight bytes",
	       "ppl", "delta", "mean KL", "top-1", "time");
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		double d, kl, t1;
		printf("%-16s %6d %14zu %11.4f ", r->l->name, r->s.chunk, r->bytes, r->s.ppl);
		bool full = versus(r, &d, &kl, &t1);
		if (r->ref_ppl)
			printf("%+8.3f%% ", d);
		else
			printf("%9s ", "-");
		if (full)
			printf("%10.3e %7.2f%%", kl, 100 * t1);
		else
			printf("%10s %8s", "-", "-");
		printf(" %8.2fs\n", r->s.seconds);
	}
}

static void print_json(const struct row *rows, int n, const char *text, long ntok)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "text", text);
	cJSON_AddNumberToObject(o, "tokens", (double)ntok);
	cJSON *a = cJSON_AddArrayToObject(o, "levels");
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "level", r->l->name);
		cJSON_AddNumberToObject(j, "chunk", r->s.chunk);
		cJSON_AddNumberToObject(j, "n_chunks", r->s.n_chunks);
		cJSON_AddNumberToObject(j, "scored", (double)r->s.scored);
		cJSON_AddNumberToObject(j, "weight_bytes", (double)r->bytes);
		cJSON_AddNumberToObject(j, "nll_sum", r->s.nll_sum);
		cJSON_AddNumberToObject(j, "ppl", r->s.ppl);
		double d, kl, t1;
		bool full = versus(r, &d, &kl, &t1);
		if (r->ref_ppl)
			cJSON_AddNumberToObject(j, "delta_pct", d);
		if (full) {
			cJSON_AddNumberToObject(j, "mean_kl", kl);
			cJSON_AddNumberToObject(j, "top1_agree", t1);
		}
		cJSON_AddNumberToObject(j, "seconds", r->s.seconds);
		cJSON *c = cJSON_AddArrayToObject(j, "chunk_nll");
		for (int k = 0; k < r->s.n_chunks; k++)
			cJSON_AddItemToArray(c, cJSON_CreateNumber(r->s.chunk_nll[k]));
		cJSON_AddItemToArray(a, j);
	}
	char *s = cJSON_Print(o);
	if (!s)
		cli_die("out of memory");
	puts(s);
	free(s);
	cJSON_Delete(o);
}

int main(int argc, char **argv)
{
	const char *level_list = NULL;   /* --level: default below */
	long chunks[MAX_CHUNKS] = { 256 };  /* --chunk */
	int nchunks = 1;
	long group = Q4_DEFAULT_GROUP;   /* --group-size */
	int group_set = 0;
	const char *text = NULL;         /* --text: default the bundled heldout */
	const char *ids_path = NULL;     /* --ids */
	long max_chunks = 0;             /* --max-chunks: 0 = all */
	long threads = 0;                /* --threads: 0 = physical cores */
	bool json = false;               /* --json */
	bool compare = true;             /* --no-compare: skip the float32 side run */

	cli_init(&spec);
	const char *v;
	int c;
	struct err e;
	while ((c = cli_getopt(argc, argv, &v)) != -1) {
		switch (c) {
		case 'l': level_list = v; break;
		case 'c':
			if (parse_long_list(v, 2, 1 << 20, chunks, MAX_CHUNKS, &nchunks, &e) < 0)
				cli_die_usage("--chunk: %s", e.msg);
			break;
		case 'g':
			group = cli_flag_long("--group-size", v, Q4_BLOCK, 1 << 20);
			group_set = 1;
			break;
		case 'f': text = v; break;
		case 'i': ids_path = v; break;
		case OPT_MAX_CHUNKS: max_chunks = cli_flag_long("--max-chunks", v, 1, INT_MAX); break;
		case 't': threads = cli_flag_long("--threads", v, 1, 1024); break;
		case 'j': json = true; break;
		case OPT_NO_COMPARE: compare = false; break;
		}
	}
	if (optind == argc)
		cli_die_usage("missing MODEL");
	if (text && ids_path)
		cli_die_usage("--text and --ids are exclusive");
	if (group % Q4_BLOCK != 0)
		cli_die_usage("--group-size: %ld is not a multiple of %d", group, Q4_BLOCK);
	const char *model = argv[optind];
	struct modelpath where;  /* the model's files */
	if (modelpath_resolve(&where, model, &e) < 0)
		cli_die_err(&e);
	bool container = where.kind == MODELPATH_CONTAINER || where.kind == MODELPATH_GGUF;
	if (container && (level_list || optind + 1 < argc))
		cli_die_usage("%s is a container: it is the only level (give the safetensors "
			  "MODEL to compare levels)", model);

	struct level levels[MAX_LEVELS];
	int nl = 0;
	if (container) {
		if (group_set)
			cli_die_usage("--group-size: only with an int4 level");
		levels[nl++] = (struct level){ .kind = LV_FILE, .path = model };
		snprintf(levels[0].name, sizeof levels[0].name, "%s", model);
	} else {
		char *list = strdup(level_list ? level_list : "fp32,bf16,int8,int4");
		for (char *tok = list, *next; tok; tok = next) {
			if ((next = strchr(tok, ',')))
				*next++ = 0;
			if (!*tok)
				cli_die_usage("--level: '%s' has an empty entry", level_list);
			if (nl == MAX_LEVELS)
				cli_die_usage("--level: more than %d levels", MAX_LEVELS);
			if (parse_level(tok, (int)group, &levels[nl++]) < 0)
				cli_die_usage("--level: '%s' is not fp32, bf16, int8, int4 or int4-rtn "
					  "(with +embed, +a8 or +f32 for the int levels, +b16 for "
					  "bf16 and the int levels)", tok);
		}
		free(list);
		int int4 = 0;
		for (int i = 0; i < nl; i++)
			int4 |= levels[i].kind == LV_QUANT && levels[i].qs.type == WT_Q4;
		if (group_set && !int4)
			cli_die_usage("--group-size: only with an int4 level");
		for (int i = optind + 1; i < argc; i++) {
			if (nl == MAX_LEVELS)
				cli_die_usage("more than %d levels", MAX_LEVELS);
			levels[nl] = (struct level){ .kind = LV_FILE, .path = argv[i] };
			snprintf(levels[nl].name, sizeof levels[nl].name, "%s", argv[i]);
			size_t len = strlen(argv[i]);
			if (len > 9 && !strcmp(argv[i] + len - 9, ".gguf+f32")) {
				/* the file without the suffix, the exact mode */
				argv[i][len - 4] = 0;
				levels[nl].f32act = 1;
			}
			/* a missing file is said now, not after the levels before it */
			if (access(argv[i], R_OK) < 0)
				cli_die("%s: %s", argv[i], strerror(errno));
			nl++;
		}
	}

	/* The tokens. */
	long ntok;
	int *ids;
	char tp[PATH_MAX + 64], kp[PATH_MAX + 64];
	if (ids_path) {
		ids = read_ids(ids_path, &ntok);
	} else {
		if (!text && !(text = datadir_find(BUNDLED_TEXT, tp, sizeof tp)))
			cli_die("the bundled text (data/%s) is not next to this executable; "
			    "give one with --text", BUNDLED_TEXT);
		/* a container's own tokenizer (it embeds one), else the model's
		 * tokenizer.json, else the bundled one (also for a GGUF file,
		 * whose tokenizer.ggml arrays tok reads: --ids scores with it) */
		bool qf = where.kind == MODELPATH_CONTAINER;
		const char *tok = qf ? model : access(where.tokenizer, R_OK) == 0
			? where.tokenizer : NULL;
		if (!tok && !(tok = datadir_find(BUNDLED_TOKENIZER, kp, sizeof kp)))
			cli_die("no tokenizer.json beside %s, and the bundled one is not next to "
			    "this executable; give token ids with --ids", model);
		ids = tokenize(text, tok, &ntok);
	}

	long maxc = 0;
	for (int k = 0; k < nchunks; k++)
		maxc = chunks[k] > maxc ? chunks[k] : maxc;
	/* The float32 model that runs beside every other level. */
	bool side = !container && compare;
	struct model ref;
	struct forward fref;
	static const struct level fp32 = { .name = "fp32", .kind = LV_FP32 };
	if (side) {
		start(&fref, &ref, (int)maxc, (int)threads, &fp32, load(&ref, model, &fp32));
	}

	struct row rows[MAX_LEVELS * MAX_CHUNKS];
	int nr = 0;
	bool tty = isatty(STDERR_FILENO);
	for (int i = 0; i < nl; i++) {
		bool self = levels[i].kind == LV_FP32;
		struct model m, *mp = &m;
		struct forward f, *fp = &f;
		if (self && side) {
			mp = &ref;
			fp = &fref;
		} else {
			int act8 = load(&m, levels[i].kind == LV_FILE ? levels[i].path : model,
					&levels[i]);
			start(&f, &m, (int)maxc, (int)threads, &levels[i], act8);
		}
		for (int k = 0; k < nchunks; k++) {
			struct row *r = &rows[nr++];
			*r = (struct row){ .l = &levels[i], .bytes = mp->weight_bytes, .self = self };
			if (ppl_run(fp, side && !self ? &fref : NULL, ids, ntok, (int)chunks[k],
				    (int)max_chunks, &r->s, tty ? progress : NULL, levels[i].name,
				    &e) < 0)
				cli_die("%s: %s", levels[i].name, e.msg);
			if (!tty)
				fprintf(stderr, "ppl: %s, chunk %d: %.4f (%d chunks, %.1f s)\n",
					levels[i].name, r->s.chunk, r->s.ppl, r->s.n_chunks,
					r->s.seconds);
		}
		if (fp != &fref) {
			forward_free(&f);
			model_free(&m);
		}
	}
	/* What each row compares with: the side run, or an fp32 row. */
	for (int i = 0; i < nr; i++) {
		rows[i].ref_ppl = rows[i].s.compared ? rows[i].s.ref_ppl : 0;
		for (int j = 0; j < nr && !rows[i].ref_ppl; j++)
			if (rows[j].self && rows[j].s.chunk == rows[i].s.chunk)
				rows[i].ref_ppl = rows[j].s.ppl;
	}
	if (json)
		print_json(rows, nr, ids_path ? ids_path : text, ntok);
	else
		print_table(rows, nr);
	for (int i = 0; i < nr; i++)
		ppl_stats_free(&rows[i].s);
	if (side) {
		forward_free(&fref);
		model_free(&ref);
	}
	free(ids);
	cli_exit(0);
}
