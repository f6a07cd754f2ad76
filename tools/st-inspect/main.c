/* st-inspect: what is in a model file, and whether it is what its config
 * says it should be.
 *
 *   st-inspect [options] FILE|MODEL_DIR     summary, diffed against config.json
 *                                           (a container's own, embedded)
 *   st-inspect --tensor NAME FILE           one tensor's shape and statistics
 *   st-inspect --check FILE                 every tensor scanned for NaN/Inf
 *   st-inspect --manifest CONFIG|MODEL_DIR  the tensors a config implies
 *
 * Only --tensor and --check read tensor data; everything else reads the
 * header through the mapping. Exit status: 0 fine, 1 bad input (or --check
 * found NaN/Inf), 2 usage, 3 the file does not match its config.
 */
#include "cli/cli.h"
#include "core/jsonutil.h"
#include "core/path.h"
#include "format/modelpath.h"
#include "format/config.h"
#include "format/manifest.h"
#include "source.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { OPT_CONFIG = CLI_LONG, OPT_LIST, OPT_TENSOR, OPT_CHECK, OPT_MANIFEST };

static const struct cli_opt opts[] = {
	{ 0, "FILE|MODEL_DIR", NULL, "a .safetensors file, or a directory holding\n"
	  "model.safetensors (and config.json), or a\n"
	  "quantized container (.q8, .q4; its config is\n"
	  "embedded), or a GGUF file (llama.cpp's; a qwen2\n"
	  "one is diffed against the config of its keys)" },
	{ OPT_CONFIG, "config", "CONFIG", "diff the file against this config.json (default:\n"
	  "the config.json beside the file, when there is one)" },
	{ OPT_LIST, "list", NULL, "also list every tensor: name, dtype, shape, offset" },
	{ OPT_TENSOR, "tensor", "NAME", "print one tensor's shape, dtype, offset and\n"
	  "statistics (min, max, mean, mean |x|, NaN, Inf)" },
	{ OPT_CHECK, "check", NULL, "scan every tensor for NaN and Inf values" },
	{ OPT_MANIFEST, "manifest", "CONFIG", "print the tensors CONFIG implies; no weights" },
	{ 'j', "json", NULL, "the same as one JSON object on stdout" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "st-inspect",
	.usage = "st-inspect [--json] [--list] [--config CONFIG] [--tensor NAME | --check] "
		 "FILE|MODEL_DIR\n"
		 "st-inspect [--json] --manifest CONFIG|MODEL_DIR",
	.about = "Inspects a .safetensors model file without reading its tensor data.\n",
	.opts = opts,
	.notes = "Exit status: 0 fine; 1 bad input, or --check found NaN/Inf; 2 usage;\n"
		 "3 the file does not match its config (the differences are listed).\n",
};

static bool json_out;  /* --json: one JSON object instead of text */

/* ---- small formatting helpers ---- */

/* v with thousands separators ("494,032,768"), in buf. */
static const char *commas(uint64_t v, char buf[32])
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v), o = 0;
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

static cJSON *shape_json(const struct mtensor *t)
{
	cJSON *a = cJSON_CreateArray();
	for (int d = 0; d < t->ndim; d++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)t->shape[d]));
	return a;
}

/* Prints j on stdout and frees it. */
static void emit_json(cJSON *j)
{
	char *s = cJSON_Print(j);
	if (!s)
		cli_die("out of memory");
	puts(s);
	free(s);
	cJSON_Delete(j);
}

/* A tensor name for a line of text: as it is when it is printable UTF-8,
 * else quoted with its control characters and bad bytes escaped
 * (json_quote), so that a name cannot break the line or the terminal. */
static const char *shown(char *buf, size_t cap, const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return json_quote(buf, cap, name);
	return utf8_valid(name) ? name : json_quote(buf, cap, name);
}

/* ---- totals and breakdown, shared by files and manifests ---- */

/* Parameters and tensors per role. */
static void tally(const struct manifest *m, uint64_t par[MROLE_N], int cnt[MROLE_N])
{
	memset(par, 0, MROLE_N * sizeof *par);
	memset(cnt, 0, MROLE_N * sizeof *cnt);
	for (int i = 0; i < m->n; i++) {
		enum mrole r = mrole_of(m->t[i].name);
		par[r] += mtensor_params(&m->t[i]);
		cnt[r]++;
	}
}

/* Totals, then dtypes (a line of text, or NULL), then the roles. */
static void breakdown_text(const struct manifest *m, const char *dtypes)
{
	uint64_t par[MROLE_N], total = manifest_params(m);
	int cnt[MROLE_N];
	tally(m, par, cnt);
	char b[32];
	printf("%-13s %d\n", "tensors", m->n);
	printf("%-13s %s\n", "parameters", commas(total, b));
	if (dtypes)
		printf("%-13s %s\n", "dtypes", dtypes);
	for (int r = 0; r < MROLE_N; r++) {
		if (r == MROLE_OTHER && !cnt[r])
			continue;
		printf("  %-11s %14s  %6.2f%%  %d tensor%s\n", mrole_name(r),
		       commas(par[r], b), total ? 100.0 * (double)par[r] / (double)total : 0,
		       cnt[r], cnt[r] == 1 ? "" : "s");
	}
}

static void breakdown_json(cJSON *o, const struct manifest *m)
{
	uint64_t par[MROLE_N], total = manifest_params(m);
	int cnt[MROLE_N];
	tally(m, par, cnt);
	cJSON_AddNumberToObject(o, "tensor_count", m->n);
	cJSON_AddNumberToObject(o, "parameter_count", (double)total);
	cJSON *b = cJSON_AddObjectToObject(o, "breakdown");
	for (int r = 0; r < MROLE_N; r++) {
		cJSON *x = cJSON_AddObjectToObject(b, mrole_name(r));
		cJSON_AddNumberToObject(x, "parameters", (double)par[r]);
		cJSON_AddNumberToObject(x, "tensors", cnt[r]);
		cJSON_AddNumberToObject(x, "share", total ? (double)par[r] / (double)total : 0);
	}
}

/* ---- the modes ---- */

static int cmd_manifest(const char *arg)
{
	struct modelpath mp;
	struct err e;
	if (path_is_dir(arg) && modelpath_resolve(&mp, arg, &e) < 0)
		cli_die_err(&e);
	const char *path = path_is_dir(arg) ? mp.config : arg;
	struct model_config c;
	struct manifest m;
	manifest_init(&m);
	if (config_load(&c, path, &e) < 0 ||
	    (manifest_build(&m, &c, &e) < 0 && err_prefix(&e, path)))
		cli_die_err(&e);
	char sb[MTENSOR_SHAPE_STR];
	if (json_out) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "config", path);
		breakdown_json(o, &m);
		cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
		for (int i = 0; i < m.n; i++) {
			cJSON *t = cJSON_CreateObject();
			cJSON_AddStringToObject(t, "name", m.t[i].name);
			cJSON_AddItemToObject(t, "shape", shape_json(&m.t[i]));
			cJSON_AddNumberToObject(t, "parameters", (double)mtensor_params(&m.t[i]));
			cJSON_AddItemToArray(ts, t);
		}
		emit_json(o);
	} else {
		printf("%-13s %s\n", "config", path);
		breakdown_text(&m, NULL);
		int w = 0;
		for (int i = 0; i < m.n; i++)
			if ((int)strlen(m.t[i].name) > w)
				w = (int)strlen(m.t[i].name);
		printf("\n");
		for (int i = 0; i < m.n; i++)
			printf("%-*s  %s\n", w, m.t[i].name, mtensor_shape_str(&m.t[i], sb));
	}
	manifest_free(&m);
	return EXIT_OK;
}

static void tensor_list_text(const struct source *s)
{
	char nb[160];
	int w = 0, wd = 4;  /* name and dtype columns ("F8_E4M3" is wider than "BF16") */
	char sb[MTENSOR_SHAPE_STR], b[32];
	for (int i = 0; i < s->n; i++) {
		if ((int)strlen(s->t[i].name) > w)
			w = (int)strlen(s->t[i].name);
		if ((int)strlen(s->t[i].dtype) > wd)
			wd = (int)strlen(s->t[i].dtype);
	}
	printf("\n");
	for (int i = 0; i < s->n; i++)
		printf("%-*s  %-*s  %-16s  %s\n", w, shown(nb, sizeof nb, s->t[i].name), wd,
		       s->t[i].dtype,
		       mtensor_shape_str(&s->tensors.t[i], sb), commas(s->t[i].offset, b));
}

static cJSON *tensor_json(const struct source *s, int i)
{
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "name", s->t[i].name);
	cJSON_AddStringToObject(t, "dtype", s->t[i].dtype);
	cJSON_AddItemToObject(t, "shape", shape_json(&s->tensors.t[i]));
	cJSON_AddNumberToObject(t, "offset", (double)s->t[i].offset);
	cJSON_AddNumberToObject(t, "bytes", (double)s->t[i].bytes);
	cJSON_AddNumberToObject(t, "parameters", (double)mtensor_params(&s->tensors.t[i]));
	return t;
}

/* The distinct dtypes of s, in first-seen order, with tensor and parameter
 * counts; returns how many. */
static int dtype_counts(const struct source *s, const char **names, int *cnt,
			uint64_t *par, int cap)
{
	int n = 0;
	for (int i = 0; i < s->n; i++) {
		int k = 0;
		while (k < n && strcmp(names[k], s->t[i].dtype))
			k++;
		if (k == n) {
			if (n == cap)
				continue;
			names[n] = s->t[i].dtype;
			cnt[n] = 0;
			par[n++] = 0;
		}
		cnt[k]++;
		par[k] += mtensor_params(&s->tensors.t[i]);
	}
	return n;
}

/* The config comparison: diff and counts. */
struct cmp {
	const char *config;  /* NULL when there is none */
	struct mdiff *d;
	int n, missing, unexpected, shape;
};

static const char *diff_kind(enum mdiff_kind k)
{
	return k == MDIFF_MISSING ? "missing" : k == MDIFF_UNEXPECTED ? "unexpected" :
	       "wrong shape";
}

static void summary_text(const struct source *s, const struct cmp *c, bool list)
{
	char nb[160];
	char b[32], sb[256], sb2[MTENSOR_SHAPE_STR];
	printf("%-13s %s\n", "file", s->path);
	printf("%-13s %s\n", "format", s->format);
	printf("%-13s %s bytes\n", "file size", commas(s->file_size, b));
	printf("%-13s %s bytes\n", "header size", commas(s->header_size, b));
	printf("%-13s %s\n", "data offset", commas(s->data_offset, b));
	const char *dn[ST_NDTYPES];
	int dc[ST_NDTYPES];
	uint64_t dp[ST_NDTYPES];
	int nd = dtype_counts(s, dn, dc, dp, ST_NDTYPES);
	char dl[ST_NDTYPES * 32] = "none";
	for (int k = 0, o = 0; k < nd; k++)
		o += snprintf(dl + o, sizeof dl - (size_t)o, "%s%s (%d tensor%s)",
			      k ? ", " : "", dn[k], dc[k], dc[k] == 1 ? "" : "s");
	breakdown_text(&s->tensors, dl);
	for (int i = 0; i < s->nmeta; i++)
		printf("%-13s %s = %s\n", i ? "" : "metadata", s->meta_keys[i], s->meta_vals[i]);
	if (!c->config)
		printf("%-13s none\n", "config");
	else if (!c->n)
		printf("%-13s %s: matches\n", "config", c->config);
	else
		printf("%-13s %s: %d missing, %d unexpected, %d wrong shape\n", "config",
		       c->config, c->missing, c->unexpected, c->shape);
	for (int i = 0; i < c->n; i++) {
		const struct mdiff *d = &c->d[i];
		if (d->kind == MDIFF_SHAPE)
			printf("  %-11s %s %s, expected %s\n", diff_kind(d->kind),
			       shown(nb, sizeof nb, d->have->name),
			       mtensor_shape_str(d->have, sb), mtensor_shape_str(d->want, sb2));
		else {
			const struct mtensor *t = d->want ? d->want : d->have;
			printf("  %-11s %s %s\n", diff_kind(d->kind), shown(nb, sizeof nb, t->name),
			       mtensor_shape_str(t, sb));
		}
	}
	if (list)
		tensor_list_text(s);
}

static void summary_json(const struct source *s, const struct cmp *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "file", s->path);
	cJSON_AddStringToObject(o, "format", s->format);
	cJSON_AddNumberToObject(o, "file_size", (double)s->file_size);
	cJSON_AddNumberToObject(o, "header_size", (double)s->header_size);
	cJSON_AddNumberToObject(o, "data_offset", (double)s->data_offset);
	breakdown_json(o, &s->tensors);
	const char *dn[ST_NDTYPES];
	int dc[ST_NDTYPES];
	uint64_t dp[ST_NDTYPES];
	int nd = dtype_counts(s, dn, dc, dp, ST_NDTYPES);
	cJSON *dts = cJSON_AddObjectToObject(o, "dtypes");
	for (int k = 0; k < nd; k++) {
		cJSON *x = cJSON_AddObjectToObject(dts, dn[k]);
		cJSON_AddNumberToObject(x, "tensors", dc[k]);
		cJSON_AddNumberToObject(x, "parameters", (double)dp[k]);
	}
	cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
	for (int i = 0; i < s->nmeta; i++)
		cJSON_AddStringToObject(meta, s->meta_keys[i], s->meta_vals[i]);
	if (!c->config) {
		cJSON_AddNullToObject(o, "config");
	} else {
		cJSON *x = cJSON_AddObjectToObject(o, "config");
		cJSON_AddStringToObject(x, "path", c->config);
		cJSON_AddBoolToObject(x, "match", c->n == 0);
		const char *keys[3] = { "missing", "unexpected", "wrong_shape" };
		cJSON *lists[3];
		for (int k = 0; k < 3; k++)
			lists[k] = cJSON_AddArrayToObject(x, keys[k]);
		for (int i = 0; i < c->n; i++) {
			const struct mdiff *d = &c->d[i];
			const struct mtensor *t = d->have ? d->have : d->want;
			cJSON *y = cJSON_CreateObject();
			cJSON_AddStringToObject(y, "name", t->name);
			cJSON_AddItemToObject(y, "shape", shape_json(t));
			if (d->kind == MDIFF_SHAPE)
				cJSON_AddItemToObject(y, "expected", shape_json(d->want));
			cJSON_AddItemToArray(lists[d->kind == MDIFF_MISSING ? 0 :
						   d->kind == MDIFF_UNEXPECTED ? 1 : 2], y);
		}
	}
	cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
	for (int i = 0; i < s->n; i++)
		cJSON_AddItemToArray(ts, tensor_json(s, i));
	emit_json(o);
}

/* config: a config.json path, or NULL for the one embedded in the file (a
 * container), or none. */
static int cmd_summary(const struct source *s, const char *config, bool list)
{
	struct cmp c = { .config = config ? config : s->config ? "embedded" : NULL };
	struct err e;
	struct manifest want;
	manifest_init(&want);
	if (c.config) {
		struct model_config mc;
		if (config ? config_load(&mc, config, &e) < 0 : (mc = *s->config, 0))
			cli_die_err(&e);
		if ((manifest_build(&want, &mc, &e) < 0 && err_prefix(&e, c.config)) ||
		    manifest_diff(&want, &s->tensors, &c.d, &c.n, &e) < 0)
			cli_die_err(&e);
		for (int i = 0; i < c.n; i++) {
			c.missing += c.d[i].kind == MDIFF_MISSING;
			c.unexpected += c.d[i].kind == MDIFF_UNEXPECTED;
			c.shape += c.d[i].kind == MDIFF_SHAPE;
		}
	}
	if (json_out)
		summary_json(s, &c);
	else
		summary_text(s, &c, list);
	int status = EXIT_OK;
	if (c.n) {
		fflush(stdout);
		fprintf(stderr, "%s: %s: does not match %s: %d missing, %d unexpected, "
			"%d wrong shape\n", cli_prog(), s->path,
			config ? config : "its embedded config", c.missing,
			c.unexpected, c.shape);
		status = EXIT_MISMATCH;
	}
	free(c.d);
	manifest_free(&want);
	return status;
}

/* A statistic for JSON: null when there were no finite values. */
static cJSON *stat_json(const struct tstats *st, double v)
{
	return st->n_finite ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static int cmd_tensor(const struct source *s, const char *name)
{
	char nb[160];
	int i = source_find(s, name);
	if (i < 0)
		cli_die("%s: no tensor named %s", s->path, json_quote(nb, sizeof nb, name));
	struct tstats st;
	struct err e;
	if (s->stats(s, i, &st, &e) < 0)
		cli_die_err(&e);
	if (json_out) {
		cJSON *o = tensor_json(s, i);
		cJSON_AddItemToObject(o, "min", stat_json(&st, st.min));
		cJSON_AddItemToObject(o, "max", stat_json(&st, st.max));
		cJSON_AddItemToObject(o, "mean", stat_json(&st, st.mean));
		cJSON_AddItemToObject(o, "mean_abs", stat_json(&st, st.mean_abs));
		cJSON_AddItemToObject(o, "nan", st.decoded ? cJSON_CreateNumber((double)st.n_nan)
				      : cJSON_CreateNull());
		cJSON_AddItemToObject(o, "inf", st.decoded ? cJSON_CreateNumber((double)st.n_inf)
				      : cJSON_CreateNull());
		emit_json(o);
		return EXIT_OK;
	}
	char b[32], sb[256];
	printf("%-13s %s\n", "name", shown(nb, sizeof nb, s->t[i].name));
	printf("%-13s %s\n", "dtype", s->t[i].dtype);
	printf("%-13s %s\n", "shape", mtensor_shape_str(&s->tensors.t[i], sb));
	printf("%-13s %s\n", "offset", commas(s->t[i].offset, b));
	printf("%-13s %s\n", "bytes", commas(s->t[i].bytes, b));
	printf("%-13s %s\n", "parameters", commas(st.n, b));
	if (st.n_finite) {
		printf("%-13s %.9g\n", "min", st.min);
		printf("%-13s %.9g\n", "max", st.max);
		printf("%-13s %.9g\n", "mean", st.mean);
		printf("%-13s %.9g\n", "mean |x|", st.mean_abs);
	}
	if (!st.decoded) {
		printf("%-13s not decoded (%s)\n", "values", s->t[i].dtype);
		return EXIT_OK;
	}
	printf("%-13s %" PRIu64 "\n", "nan", st.n_nan);
	printf("%-13s %" PRIu64 "\n", "inf", st.n_inf);
	return EXIT_OK;
}

static int cmd_check(const struct source *s)
{
	uint64_t values = 0, nan = 0, inf = 0;
	int bad = 0, undecoded = 0;
	cJSON *o = NULL, *list = NULL;
	if (json_out) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "file", s->path);
		list = cJSON_CreateArray();
	}
	for (int i = 0; i < s->n; i++) {
		struct tstats st;
		struct err e;
		if (s->stats(s, i, &st, &e) < 0)
			cli_die_err(&e);
		if (!st.decoded) {
			undecoded++;
			continue;
		}
		values += st.n;
		nan += st.n_nan;
		inf += st.n_inf;
		if (!st.n_nan && !st.n_inf)
			continue;
		bad++;
		if (json_out) {
			cJSON *t = cJSON_CreateObject();
			cJSON_AddStringToObject(t, "name", s->t[i].name);
			cJSON_AddNumberToObject(t, "nan", (double)st.n_nan);
			cJSON_AddNumberToObject(t, "inf", (double)st.n_inf);
			cJSON_AddItemToArray(list, t);
		} else {
			printf("%s: %" PRIu64 " NaN, %" PRIu64 " Inf\n", s->t[i].name,
			       st.n_nan, st.n_inf);
		}
	}
	char b[32];
	if (json_out) {
		cJSON_AddNumberToObject(o, "tensors", s->n - undecoded);
		cJSON_AddNumberToObject(o, "not_decoded", undecoded);
		cJSON_AddNumberToObject(o, "values", (double)values);
		cJSON_AddNumberToObject(o, "nan", (double)nan);
		cJSON_AddNumberToObject(o, "inf", (double)inf);
		cJSON_AddItemToObject(o, "bad_tensors", list);
		emit_json(o);
	} else {
		printf("checked %d tensors, %s values: %" PRIu64 " NaN, %" PRIu64 " Inf\n",
		       s->n - undecoded, commas(values, b), nan, inf);
		if (undecoded)
			printf("not checked: %d tensor%s whose dtype is not decoded (F6_E2M3, "
			       "F6_E3M2, C64)\n", undecoded, undecoded == 1 ? "" : "s");
	}
	if (bad) {
		fflush(stdout);
		fprintf(stderr, "%s: %s: %d tensor%s with NaN or Inf values\n", cli_prog(),
			s->path, bad, bad == 1 ? "" : "s");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	cli_init(&spec);

	const char *config = NULL;    /* --config: NULL = the one beside the file */
	const char *tensor = NULL;    /* --tensor NAME */
	const char *manifest = NULL;  /* --manifest CONFIG */
	bool check = false;           /* --check */
	bool list = false;            /* --list */

	const char *v;
	int ch;
	while ((ch = cli_getopt(argc, argv, &v)) != -1) {
		switch (ch) {
		case OPT_CONFIG: config = v; break;
		case OPT_LIST: list = true; break;
		case OPT_TENSOR: tensor = v; break;
		case OPT_CHECK: check = true; break;
		case OPT_MANIFEST: manifest = v; break;
		case 'j': json_out = true; break;
		}
	}
	int modes = !!tensor + check + !!manifest;
	if (modes > 1)
		cli_die_usage("--tensor, --check and --manifest are exclusive");
	if ((config || list) && modes)
		cli_die_usage("--config and --list go with the summary only");

	if (manifest) {
		if (optind != argc)
			cli_die_usage("--manifest takes no FILE");
		cli_exit(cmd_manifest(manifest));
	}
	if (argc - optind != 1)
		cli_die_usage(optind == argc ? "no FILE given" : "more than one FILE given");

	const char *arg = argv[optind];
	struct modelpath mp;
	struct source s;
	struct err e;
	if (modelpath_resolve(&mp, arg, &e) < 0 || source_open(&s, mp.weights, &e) < 0)
		cli_die_err(&e);
	/* The generation settings beside a safetensors file are read as
	 * forward reads them (a container's and a GGUF file's were at open). */
	struct gen_config gen;
	if (!s.config && access(mp.gen, F_OK) == 0 && gen_config_load(&gen, mp.gen, &e) < 0)
		cli_die_err(&e);
	/* A container carries its config; otherwise the one beside the file,
	 * when there is one. */
	const char *cfg = config ? config : s.config || access(mp.config, F_OK) ? NULL
		: mp.config;
	int status = tensor ? cmd_tensor(&s, tensor) : check ? cmd_check(&s) :
		     cmd_summary(&s, cfg, list);
	source_close(&s);
	cli_exit(status);
}
