/* quantize: a safetensors model to an int8 or int4 container.
 *
 * The container is lib/format/qfile.h.
 *
 *   quantize MODEL -o OUT --level int8|int4 [--group-size N] [--embeddings]
 *            [--report FILE] [--dry-run]
 *
 * Every 2-D weight is quantized (lib/kernels/quant.h), the embedding matrix only with
 * --embeddings; norms and biases stay as they are. The output is written to
 * a temporary file beside OUT and renamed into place only when complete and
 * flushed: a failure, SIGINT, SIGTERM or SIGHUP leaves neither a partial OUT
 * nor the temporary file.
 */
#include "core/bf16.h"
#include "cli/cli.h"
#include "format/modelpath.h"
#include "format/config.h"
#include "core/jsonutil.h"
#include "format/manifest.h"
#include "core/mapfile.h"
#include "format/qfile.h"
#include "kernels/quant.h"
#include "model/gguf_export.h"
#include "model/qwrite.h"
#include "format/safetensors.h"

#include <cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_REPORT = CLI_LONG, OPT_DRY_RUN, OPT_FORMAT };

/* The --level names of --format gguf, for messages. */
#define GGUF_LEVELS "bf16, f16, q8_0, q4_0, q4_k_m, q5_k_m or q6_k"

static const struct cli_opt opts[] = {
	{ 0, "MODEL", NULL, "a model directory (config.json, model.safetensors,\n"
	  "generation_config.json, tokenizer.json), or its\n"
	  ".safetensors file with those beside it" },
	{ 'o', "output", "OUT", "the container to write (atomically: a temporary\n"
	  "file beside OUT, renamed when complete)" },
	{ 'l', "level", "L", "int8: one scale per output row, max|row|/127;\n"
	  "int4: one scale per group along the input, -m/8\n"
	  "for m the group's weight of largest magnitude,\n"
	  "codes in [-8, 7];\n"
	  "with --format gguf: bf16, f16, q8_0, q4_0,\n"
	  "q4_k_m, q5_k_m or q6_k: the types llama-quantize\n"
	  "gives each tensor in such a file (docs/gguf.md)" },
	{ OPT_FORMAT, "format", "F", "container (default: .q8, .q4) or gguf (llama.cpp's\n"
	  "format, read by llama.cpp, ollama and this engine)" },
	{ 'g', "group-size", "N", "int4 group size, a multiple of 32 (default 32)" },
	{ 'e', "embeddings", NULL, "also quantize the embedding matrix (the LM head\n"
	  "when tied)" },
	{ OPT_REPORT, "report", "FILE", "one JSON line per tensor: name, shape, type,\n"
	  "relative weight error, bytes before and after" },
	{ OPT_DRY_RUN, "dry-run", NULL, "quantize and report, write no container" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "quantize",
	.usage = "quantize MODEL -o OUT --level int8|int4 [--group-size N] [--embeddings] "
		 "[--report FILE] [--dry-run], or quantize MODEL -o OUT.gguf --format gguf "
		 "--level bf16|f16|q8_0|q4_0|q4_k_m|q5_k_m|q6_k",
	.about = "Writes a quantized container (.q8, .q4) or a GGUF file from a safetensors model.\n",
	.opts = opts,
	.notes = "Progress goes to stderr. Exit status: 0 done, 1 failure, 2 usage.\n",
};

/* Maps an optional file: absent is empty, any other failure dies. */
static void map_optional(struct mapfile *m, const char *path)
{
	struct err e;
	if (access(path, F_OK) != 0) {
		m->data = NULL;
		m->size = 0;
		return;
	}
	if (mapfile_open(m, path, &e) < 0)
		cli_die_err(&e);
}

/* The safetensors model both formats read: its weights, config, generation
 * config and tokenizer, checked against each other before any byte is
 * written. Dies with one line on anything wrong. */
struct source {
	struct modelpath mf;
	struct st_file st;
	struct model_config cfg;
	struct mapfile gen, tok;  /* empty when absent */
	struct gen_config gc;     /* parsed from gen, else the defaults */
	struct manifest want, have;
};

static void source_open(struct source *s, const char *model)
{
	struct err e;
	if (modelpath_resolve(&s->mf, model, &e) < 0)
		cli_die_err(&e);
	if (s->mf.kind == MODELPATH_CONTAINER)
		cli_die("%s: already a quantized container (quantize reads a safetensors "
			"model: a directory or its model.safetensors)", model);
	if (s->mf.kind == MODELPATH_GGUF)
		cli_die("%s: GGUF input is not supported (quantize reads a safetensors model: "
			"a directory or its model.safetensors); forward, generate and chat run "
			"a GGUF file as it is", model);
	/* the weights first: given something that is not a model, say so,
	 * rather than that no config.json is beside it */
	if (st_open(&s->st, s->mf.weights, &e) < 0 || config_load(&s->cfg, s->mf.config, &e) < 0)
		cli_die_err(&e);
	map_optional(&s->gen, s->mf.gen);
	map_optional(&s->tok, s->mf.tokenizer);
	gen_config_default(&s->gc, &s->cfg);
	if (s->gen.size &&
	    gen_config_parse(&s->gc, (const char *)s->gen.data, s->gen.size, s->mf.gen, &e) < 0)
		cli_die_err(&e);
	manifest_init(&s->want);
	manifest_init(&s->have);
	if (manifest_build(&s->want, &s->cfg, &e) < 0 || manifest_from_st(&s->have, &s->st, &e) < 0 ||
	    manifest_check(&s->want, &s->have, s->mf.weights, "config.json", &e) < 0)
		cli_die_err(&e);
}

/* Dies when the output (-o, --report) is one of the files the source was
 * read from: it would be overwritten by what is made from it. */
static void source_not_output(const struct source *s, const char *out, const char *flag)
{
	const char *const in[] = { s->mf.weights, s->mf.config, s->mf.gen, s->mf.tokenizer };
	cli_refuse_input(flag, out, in, sizeof in / sizeof in[0]);
}

static void source_close(struct source *s)
{
	manifest_free(&s->want);
	manifest_free(&s->have);
	mapfile_close(&s->gen);
	mapfile_close(&s->tok);
	st_close(&s->st);
}

static void report_line(FILE *f, const struct st_tensor *t, const char *type,
			double rel, uint64_t bytes)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "name", t->name);
	cJSON *shape = cJSON_AddArrayToObject(j, "shape");
	for (int d = 0; d < t->ndim; d++)
		cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
	cJSON_AddStringToObject(j, "type", type);
	cJSON_AddNumberToObject(j, "rel_error", rel);
	cJSON_AddNumberToObject(j, "bytes_before", (double)(t->end - t->begin));
	cJSON_AddNumberToObject(j, "bytes_after", (double)bytes);
	char *s = cJSON_PrintUnformatted(j);
	if (!s)
		cli_die("out of memory");
	fprintf(f, "%s\n", s);
	free(s);
	cJSON_Delete(j);
}

/* What the hooks keep between tensors. */
struct progress {
	bool tty;          /* a bar on stderr, else a line per tensor */
	FILE *report;      /* --report, or NULL */
	const char *report_path;
	uint64_t before, after;
};

static int on_tensor(void *arg, int i, int n, const struct qwrite_info *info, struct err *e)
{
	struct progress *pg = arg;
	const char *name = info->t->name;
	if (pg->tty) {
		int w = 30, done = ((i + 1) * w) / n;
		fprintf(stderr, "\rquantize: [%.*s%*s] %d/%d %-50.50s", done,
			"##############################", w - done, "", i + 1, n, name);
		if (i + 1 == n)
			fputc('\n', stderr);
	} else {
		fprintf(stderr, "quantize: %d/%d %s\n", i + 1, n, name);
	}
	pg->before += info->bytes_before;
	pg->after += info->bytes_after;
	if (pg->report) {
		/* flushed line by line: a report that cannot be written stops
		 * the run before the container is renamed into place */
		report_line(pg->report, info->t, qfile_type_name(info->type), info->rel_error,
			    info->bytes_after);
		if (fflush(pg->report) != 0 || ferror(pg->report))
			return err_set(e, "%s: write error", pg->report_path);
	}
	return 0;
}

/* --format gguf (lib/model/gguf_export.h). */
static int write_gguf(const char *model, const char *out, const char *level, bool other)
{
	static const struct { const char *name; enum gguf_mix mix; } levels[] = {
		{ "bf16", GGUF_MIX_BF16 }, { "f16", GGUF_MIX_F16 }, { "q8_0", GGUF_MIX_Q8_0 },
		{ "q4_0", GGUF_MIX_Q4_0 }, { "q4_k_m", GGUF_MIX_Q4_K_M },
		{ "q5_k_m", GGUF_MIX_Q5_K_M }, { "q6_k", GGUF_MIX_Q6_K },
	};
	const int nlevels = (int)(sizeof levels / sizeof levels[0]);
	if (other)
		cli_die_usage("--format gguf takes no --group-size, --embeddings, --report or "
			      "--dry-run");
	if (!out)
		cli_die_usage("-o OUT is required");
	if (!level)
		cli_die_usage("--level is required (" GGUF_LEVELS " with --format gguf)");
	int k = 0;
	while (k < nlevels && strcmp(level, levels[k].name))
		k++;
	if (k == nlevels)
		cli_die_usage("--level: '%s' is not " GGUF_LEVELS " (--format gguf)", level);
	struct err e;
	struct source src;
	source_open(&src, model);
	source_not_output(&src, out, "-o");
	const struct modelpath *mf = &src.mf;
	if (!src.tok.size)
		cli_die("%s: no tokenizer.json: a GGUF file carries its tokenizer", mf->tokenizer);
	struct mapfile tc;
	char tcp[PATH_MAX + 32];
	snprintf(tcp, sizeof tcp, "%.*stokenizer_config.json",
		 (int)(strlen(mf->tokenizer) - strlen("tokenizer.json")), mf->tokenizer);
	map_optional(&tc, tcp);
	cJSON *tcj = NULL;
	if (tc.size && json_parse_text(&tcj, (const char *)tc.data, tc.size, tcp, &e) < 0)
		cli_die_err(&e);
	const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(tcj, "chat_template");
	char dir[PATH_MAX + 32];
	snprintf(dir, sizeof dir, "%s", mf->config);
	dir[strlen(dir) - strlen("config.json")] = 0;
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dir[--dl] = 0;
	const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	struct gguf_out_model m = {
		.name = *base ? base : "model", .st = &src.st, .cfg = &src.cfg,
		.gen = src.gen.size ? &src.gc : NULL, .tok_json = (const char *)src.tok.data,
		.tok_len = src.tok.size, .tok_name = mf->tokenizer,
		.chat_template = cJSON_IsString(tmpl) ? tmpl->valuestring : NULL,
	};
	if (gguf_write_model(out, &m, levels[k].mix, &e) < 0)
		cli_die_err(&e);
	fprintf(stderr, "quantize: %s: GGUF, %s matrices\n", out, level);
	cJSON_Delete(tcj);
	mapfile_close(&tc);
	source_close(&src);
	return 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL;         /* -o: the container */
	int level = 0;                  /* --level: 8 or 4, required */
	long group = Q4_DEFAULT_GROUP;  /* --group-size, int4 only */
	bool group_set = false;
	bool embeddings = false;        /* --embeddings */
	const char *report = NULL;      /* --report FILE */
	bool dry = false;               /* --dry-run */
	bool gguf = false;              /* --format gguf */
	const char *level_name = NULL;  /* --level as given */

	cli_init(&spec);
	const char *v;
	int c;
	while ((c = cli_getopt(argc, argv, &v)) != -1) {
		switch (c) {
		case 'o':
			if (!strcmp(v, "-"))
				cli_die_usage("-o: quantize writes a file, not standard output");
			out = v;
			break;
		case 'l': level_name = v; break;
		case OPT_FORMAT:
			if (!strcmp(v, "gguf"))
				gguf = true;
			else if (strcmp(v, "container"))
				cli_die_usage("--format: '%s' is not container or gguf", v);
			break;
		case 'g':
			group = cli_flag_long("--group-size", v, Q4_BLOCK, 1 << 20);
			group_set = true;
			break;
		case 'e': embeddings = true; break;
		case OPT_REPORT: report = v; break;
		case OPT_DRY_RUN: dry = true; break;
		}
	}
	if (optind != argc - 1)
		cli_die_usage(optind == argc ? "missing MODEL" : "more than one MODEL");
	if (gguf)
		cli_exit(write_gguf(argv[optind], out, level_name,
				    group_set || embeddings || report || dry));
	if (!level_name)
		cli_die_usage("--level is required (int8 or int4)");
	if (!strcmp(level_name, "int8"))
		level = 8;
	else if (!strcmp(level_name, "int4"))
		level = 4;
	else
		cli_die_usage("--level: '%s' is not int8 or int4", level_name);
	if (!out && !dry)
		cli_die_usage("-o OUT is required (or --dry-run)");
	if (group_set && level != 4)
		cli_die_usage("--group-size: only with --level int4");
	if (group % Q4_BLOCK != 0)
		cli_die_usage("--group-size: %ld is not a multiple of %d", group, Q4_BLOCK);

	struct err e;
	struct source src;
	source_open(&src, argv[optind]);
	source_not_output(&src, out, "-o");
	source_not_output(&src, report, "--report");
	if (out && report && cli_same_file(out, report))
		cli_die_usage("-o and --report: both write %s", out);
	const struct modelpath *mf = &src.mf;

	/* Every tensor planned before any byte is written. */
	struct qwrite_opts o = { .level = level, .group_size = (int)group,
				 .embeddings = embeddings, .dry_run = dry, .rel_error = true };
	struct qfile_entry *plan;
	switch (qwrite_plan(&src.st, &o, &plan, &e)) {
	case QWRITE_EDTYPE: cli_die("%s: %s", mf->weights, e.msg);
	case QWRITE_EGROUP: cli_die_usage("--group-size: %s", e.msg);
	}

	struct progress pg = { .tty = isatty(STDERR_FILENO), .report_path = report };
	if (report && !(pg.report = fopen(report, "w")))
		cli_die("%s: %m", report);
	struct mapfile cfgmap;
	if (mapfile_open(&cfgmap, mf->config, &e) < 0)
		cli_die_err(&e);
	static const char empty_json[] = "{}";
	struct qfile_header h = {
		.config_json = (const char *)cfgmap.data, .config_len = cfgmap.size,
		.gen_json = src.gen.size ? (const char *)src.gen.data : empty_json,
		.gen_len = src.gen.size ? src.gen.size : 2,
		.tokenizer_json = (const char *)src.tok.data, .tokenizer_len = src.tok.size,
	};
	struct qwrite_hooks hooks = { .tensor = on_tensor, .arg = &pg };
	int rc = qwrite_model(out, &src.st, plan, &h, &o, &hooks, &e);
	if (rc < 0)
		cli_die_err(&e);
	if (pg.report && (fflush(pg.report) != 0 || ferror(pg.report) || fclose(pg.report) != 0))
		cli_die("%s: write error", report);
	uint64_t before = pg.before, after = pg.after;
	fprintf(stderr, "quantize: %s%s: %" PRIu64 " bytes of tensors, %.1f%% of %" PRIu64 " (int%d%s)\n",
		dry ? "dry run, not written: " : "", dry ? argv[optind] : out, after,
		100.0 * (double)after / (double)before, before, level,
		embeddings ? ", embeddings too" : "");
	free(plan);
	mapfile_close(&cfgmap);
	source_close(&src);
	cli_exit(0);
}
