/* synthetic: see synthetic.h. */
#include "harness/synthetic.h"

#include <cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "format/config.h"
#include "format/manifest.h"
#include "core/outfile.h"
#include "core/mapfile.h"
#include "format/qfile.h"
#include "kernels/quant.h"
#include "model/qwrite.h"
#include "format/safetensors.h"

/* Bumped whenever the bytes written change: old caches are then ignored. */
#define GENERATOR_VERSION 3
#define ALIGN 64
#define CHUNK (1 << 20)

int synthetic_cache_root(char *buf, size_t cap, struct err *e)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;
	if (xdg && *xdg)
		n = snprintf(buf, cap, "%s/qwenpipe", xdg);
	else if (home && *home)
		n = snprintf(buf, cap, "%s/.cache/qwenpipe", home);
	else
		return err_set(e, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
	if (n < 0 || (size_t)n >= cap)
		return err_set(e, "cache directory path too long");
	/* mkdir -p, one component at a time. */
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		int rc = mkdir(buf, 0755);
		*p = c;
		if (rc < 0 && errno != EEXIST) {
			*p = 0;
			err_set(e, "%s: %s", buf, strerror(errno));
			*p = c;
			return -1;
		}
		if (!c)
			return 0;
	}
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* ---- writing a file atomically (lib/core/outfile.h) ---- */

/* ok: whether every write succeeded. Commits, or removes the file. */
static int out_close(struct outfile *o, int ok, const char *path, struct err *e)
{
	if (ok)
		return outfile_commit(o, e);
	outfile_abort(o);
	return err_write(e, errno, "%s: write error", path);
}

static int copy_file(const char *from, const char *to, struct err *e)
{
	struct mapfile m;
	struct outfile o;
	if (mapfile_open(&m, from, e) < 0)
		return -1;
	if (outfile_open(&o, to, e) < 0) {
		mapfile_close(&m);
		return -1;
	}
	int ok = m.size == 0 || fwrite(m.data, 1, m.size, o.fp) == m.size;
	mapfile_close(&m);
	return out_close(&o, ok, to, e);
}

/* ---- the bf16 safetensors ---- */

struct xorshift {  /* not lib/core/rng: any cheap stream of bits will do */
	uint64_t s;
};

/* About +-0.03: random sign, exponent 2^-6 .. 2^-9, random mantissa. */
static uint16_t rand_bf16(struct xorshift *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	uint16_t sign = (uint16_t)((r->s >> 63) << 15);
	uint16_t expo = (uint16_t)(121 + ((r->s >> 40) & 3));
	return (uint16_t)(sign | expo << 7 | ((r->s >> 20) & 0x7f));
}

static char *st_header(const struct manifest *m, size_t *len)
{
	cJSON *h = cJSON_CreateObject();
	uint64_t off = 0;
	for (int i = 0; h && i < m->n; i++) {
		cJSON *t = cJSON_AddObjectToObject(h, m->t[i].name);
		cJSON *s = t ? cJSON_AddArrayToObject(t, "shape") : NULL;
		cJSON *o = t ? cJSON_AddArrayToObject(t, "data_offsets") : NULL;
		if (!s || !o || !cJSON_AddStringToObject(t, "dtype", "BF16")) {
			cJSON_Delete(h);
			return NULL;
		}
		for (int d = 0; d < m->t[i].ndim; d++)
			cJSON_AddItemToArray(s, cJSON_CreateNumber((double)m->t[i].shape[d]));
		uint64_t bytes = 2 * mtensor_params(&m->t[i]);
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + bytes)));
		off += bytes;
	}
	char *json = h ? cJSON_PrintUnformatted(h) : NULL;
	cJSON_Delete(h);
	if (json)
		*len = strlen(json);
	return json;
}

static int write_safetensors(const char *path, const struct manifest *m, struct err *e)
{
	size_t jl;
	char *json = st_header(m, &jl);
	uint16_t *buf = malloc(2 * CHUNK);
	struct outfile o;
	if (!json || !buf) {
		free(json);
		free(buf);
		return err_set(e, "%s: out of memory", path);
	}
	if (outfile_open(&o, path, e) < 0) {
		free(json);
		free(buf);
		return -1;
	}
	/* The header is padded with spaces so the data starts 64-byte aligned. */
	size_t padded = (jl + 8 + ALIGN - 1) / ALIGN * ALIGN - 8;
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)padded >> (8 * i));
	int ok = fwrite(len, 1, 8, o.fp) == 8 && fwrite(json, 1, jl, o.fp) == jl;
	for (size_t i = jl; ok && i < padded; i++)
		ok = fputc(' ', o.fp) != EOF;
	struct xorshift r = { .s = 0x9e3779b97f4a7c15ull };
	for (int i = 0; ok && i < m->n; i++) {
		int norm = mrole_of(m->t[i].name) == MROLE_NORM;
		for (uint64_t left = mtensor_params(&m->t[i]); ok && left > 0;) {
			size_t n = left < CHUNK ? (size_t)left : CHUNK;
			for (size_t k = 0; k < n; k++)
				buf[k] = norm ? 0x3f80 : rand_bf16(&r);  /* norms: 1.0 */
			ok = fwrite(buf, 2, n, o.fp) == n;
			left -= n;
		}
	}
	free(json);
	free(buf);
	return out_close(&o, ok, path, e);
}

/* ---- the containers ---- */


static int write_container(const char *path, const char *dir, const struct st_file *st,
			   int level, struct err *e)
{
	char p[3][SYNTHETIC_PATH_MAX + 32];
	struct mapfile mf[3] = { 0 };
	static const char *names[3] = { "config.json", "generation_config.json",
					"tokenizer.json" };
	int rc = -1;
	for (int i = 0; i < 3; i++) {
		snprintf(p[i], sizeof p[i], "%s/%s", dir, names[i]);
		if ((i == 0 || access(p[i], F_OK) == 0) && mapfile_open(&mf[i], p[i], e) < 0)
			goto done;
	}
	struct qwrite_opts o = { .level = level, .group_size = Q4_DEFAULT_GROUP,
				 .embeddings = true };
	struct qfile_entry *plan;
	if (qwrite_plan(st, &o, &plan, e) < 0)
		goto done;
	static const char empty[] = "{}";
	struct qfile_header h = {
		.config_json = (const char *)mf[0].data, .config_len = mf[0].size,
		.gen_json = mf[1].size ? (const char *)mf[1].data : empty,
		.gen_len = mf[1].size ? mf[1].size : 2,
		.tokenizer_json = (const char *)mf[2].data, .tokenizer_len = mf[2].size,
	};
	rc = qwrite_model(path, st, plan, &h, &o, NULL, e);
	free(plan);
done:
	for (int i = 0; i < 3; i++)
		mapfile_close(&mf[i]);
	return rc;
}

/* ---- all of it ---- */

static int missing(const char *path)
{
	return access(path, F_OK) != 0;
}

/* A container to (re)write: missing, or of another version than this
 * build reads. */
static int stale(const char *path)
{
	return qfile_version_of(path) != QF_VERSION;
}

int synthetic_ensure(struct synthetic *s, const char *config_path,
		     synthetic_note_fn *note, void *arg, struct err *e)
{
	memset(s, 0, sizeof *s);
	struct model_config cfg;
	struct mapfile cm;
	if (config_load(&cfg, config_path, e) < 0 || mapfile_open(&cm, config_path, e) < 0)
		return -1;
	uint64_t h = fnv1a(cm.data, cm.size, 0xcbf29ce484222325ull);
	int version = GENERATOR_VERSION;
	h = fnv1a(&version, sizeof version, h);
	mapfile_close(&cm);

	/* NAME: the config's directory name ("qwen2.5-0.5b-instruct"). */
	char cdir[SYNTHETIC_PATH_MAX], root[SYNTHETIC_PATH_MAX];
	snprintf(cdir, sizeof cdir, "%s", config_path);
	char *slash = strrchr(cdir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(cdir, sizeof cdir, ".");
	const char *name = strrchr(cdir, '/') ? strrchr(cdir, '/') + 1 : cdir;
	if (!strcmp(name, ".") || !*name)
		name = "model";
	if (synthetic_cache_root(root, sizeof root, e) < 0)
		return -1;
	int n = snprintf(s->dir, sizeof s->dir, "%s/synthetic-%.100s-%016llx", root, name,
			 (unsigned long long)h);
	if (n < 0 || (size_t)n + 16 >= sizeof s->dir)
		return err_set(e, "%s: path too long", root);
	if (mkdir(s->dir, 0755) < 0 && errno != EEXIST)
		return err_set(e, "%s: %s", s->dir, strerror(errno));
	snprintf(s->q8, sizeof s->q8, "%s/model.q8", s->dir);
	snprintf(s->q4, sizeof s->q4, "%s/model.q4", s->dir);

	static const char *texts[3] = { "config.json", "generation_config.json",
					"tokenizer.json" };
	for (int i = 0; i < 3; i++) {
		char from[SYNTHETIC_PATH_MAX + 32], to[SYNTHETIC_PATH_MAX + 32];
		snprintf(from, sizeof from, "%s/%s", cdir, texts[i]);
		snprintf(to, sizeof to, "%s/%s", s->dir, texts[i]);
		if (i > 0 && missing(from))
			continue;
		if (missing(to)) {
			if (note)
				note(arg, to);
			if (copy_file(i == 0 ? config_path : from, to, e) < 0)
				return -1;
			s->written++;
		}
	}
	char st_path[SYNTHETIC_PATH_MAX + 32];
	snprintf(st_path, sizeof st_path, "%s/model.safetensors", s->dir);
	if (missing(st_path)) {
		struct manifest m;
		manifest_init(&m);
		if (note)
			note(arg, st_path);
		int rc = manifest_build(&m, &cfg, e) < 0 ? -1 : write_safetensors(st_path, &m, e);
		manifest_free(&m);
		if (rc < 0)
			return -1;
		s->written++;
	}
	if (!stale(s->q8) && !stale(s->q4))
		return 0;
	struct st_file st;
	if (st_open(&st, st_path, e) < 0)
		return -1;
	int rc = 0;
	const char *q[2] = { s->q8, s->q4 };
	for (int i = 0; rc == 0 && i < 2; i++) {
		if (!stale(q[i]))
			continue;
		if (note)
			note(arg, q[i]);
		rc = write_container(q[i], s->dir, &st, i == 0 ? 8 : 4, e);
		s->written += rc == 0;
	}
	st_close(&st);
	return rc;
}
