/* manifest: see manifest.h. */
#include "format/manifest.h"
#include "core/jsonutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void manifest_init(struct manifest *m)
{
	memset(m, 0, sizeof *m);
}

int manifest_add(struct manifest *m, const char *name, int ndim,
		 const int64_t *shape, struct err *e)
{
	if (m->n == m->cap) {
		int cap = m->cap ? 2 * m->cap : 64;
		struct mtensor *t = realloc(m->t, (size_t)cap * sizeof *t);
		if (!t)
			return err_set(e, "out of memory");
		m->t = t;
		m->cap = cap;
	}
	struct mtensor *t = &m->t[m->n];
	memset(t, 0, sizeof *t);
	t->name = strdup(name);
	if (!t->name)
		return err_set(e, "out of memory");
	t->ndim = ndim;
	memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
	m->n++;
	return 0;
}

void manifest_free(struct manifest *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->t[i].name);
	free(m->t);
	manifest_init(m);
}

/* Adds "prefix" + "suffix" with a 1-d or 2-d shape (d1 == 0 for 1-d). */
static int add(struct manifest *m, const char *prefix, const char *suffix,
	       int64_t d0, int64_t d1, struct err *e)
{
	char name[128];
	snprintf(name, sizeof name, "%s%s", prefix, suffix);
	int64_t shape[2] = { d0, d1 };
	return manifest_add(m, name, d1 ? 2 : 1, shape, e);
}

int manifest_build(struct manifest *m, const struct model_config *c, struct err *e)
{
	int64_t hidden = c->hidden_size, inter = c->intermediate_size;
	int64_t q = (int64_t)c->n_heads * c->head_dim;
	int64_t kv = (int64_t)c->n_kv_heads * c->head_dim;
	if (add(m, "model.", "embed_tokens.weight", c->vocab_size, hidden, e) < 0)
		goto fail;
	for (int l = 0; l < c->n_layers; l++) {
		char p[64];
		snprintf(p, sizeof p, "model.layers.%d.", l);
		if (add(m, p, "input_layernorm.weight", hidden, 0, e) < 0 ||
		    add(m, p, "self_attn.q_proj.weight", q, hidden, e) < 0 ||
		    add(m, p, "self_attn.q_proj.bias", q, 0, e) < 0 ||
		    add(m, p, "self_attn.k_proj.weight", kv, hidden, e) < 0 ||
		    add(m, p, "self_attn.k_proj.bias", kv, 0, e) < 0 ||
		    add(m, p, "self_attn.v_proj.weight", kv, hidden, e) < 0 ||
		    add(m, p, "self_attn.v_proj.bias", kv, 0, e) < 0 ||
		    add(m, p, "self_attn.o_proj.weight", hidden, q, e) < 0 ||
		    add(m, p, "post_attention_layernorm.weight", hidden, 0, e) < 0 ||
		    add(m, p, "mlp.gate_proj.weight", inter, hidden, e) < 0 ||
		    add(m, p, "mlp.up_proj.weight", inter, hidden, e) < 0 ||
		    add(m, p, "mlp.down_proj.weight", hidden, inter, e) < 0)
			goto fail;
	}
	if (add(m, "model.", "norm.weight", hidden, 0, e) < 0)
		goto fail;
	if (!c->tie_embeddings &&
	    add(m, "", "lm_head.weight", c->vocab_size, hidden, e) < 0)
		goto fail;
	/* Totals are uint64: a config whose parameters do not fit in 63 bits
	 * (no file can hold them) would print wrapped sums. */
	uint64_t total = 0;
	for (int i = 0; i < m->n; i++) {
		uint64_t n = 1;
		for (int d = 0; d < m->t[i].ndim; d++)
			if (__builtin_mul_overflow(n, (uint64_t)m->t[i].shape[d], &n))
				n = UINT64_MAX;
		if (__builtin_add_overflow(total, n, &total) || total > INT64_MAX) {
			err_set(e, "the config's tensors hold more than 2^63 parameters "
				"(hidden_size %d, intermediate_size %d, vocab_size %d, "
				"num_hidden_layers %d)", c->hidden_size, c->intermediate_size,
				c->vocab_size, c->n_layers);
			goto fail;
		}
	}
	return 0;
fail:
	manifest_free(m);
	return -1;
}

int manifest_from_st(struct manifest *m, const struct st_file *f, struct err *e)
{
	for (int i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		if (manifest_add(m, t->name, t->ndim, t->shape, e) < 0) {
			manifest_free(m);
			return -1;
		}
	}
	return 0;
}

uint64_t mtensor_params(const struct mtensor *t)
{
	uint64_t n = 1;
	for (int d = 0; d < t->ndim; d++)
		n *= (uint64_t)t->shape[d];
	return n;
}

const char *mtensor_shape_str(const struct mtensor *t, char buf[MTENSOR_SHAPE_STR])
{
	int o = snprintf(buf, MTENSOR_SHAPE_STR, "[");
	for (int d = 0; d < t->ndim; d++)
		o += snprintf(buf + o, (size_t)(MTENSOR_SHAPE_STR - o), "%s%" PRId64,
			      d ? ", " : "", t->shape[d]);
	snprintf(buf + o, (size_t)(MTENSOR_SHAPE_STR - o), "]");
	return buf;
}

uint64_t manifest_params(const struct manifest *m)
{
	uint64_t n = 0;
	for (int i = 0; i < m->n; i++)
		n += mtensor_params(&m->t[i]);
	return n;
}

enum mrole mrole_of(const char *name)
{
	if (strstr(name, "embed_tokens") || strstr(name, "lm_head"))
		return MROLE_EMBED;
	if (strstr(name, "self_attn"))
		return MROLE_ATTN;
	if (strstr(name, "mlp"))
		return MROLE_MLP;
	if (strstr(name, "norm"))
		return MROLE_NORM;
	return MROLE_OTHER;
}

const char *mrole_name(enum mrole r)
{
	static const char *names[MROLE_N] = {
		"embeddings", "attention", "mlp", "norms", "other",
	};
	return (unsigned)r < MROLE_N ? names[r] : "?";
}

static int by_name(const void *a, const void *b)
{
	const struct mtensor *x = *(const struct mtensor *const *)a;
	const struct mtensor *y = *(const struct mtensor *const *)b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x > y) - (x < y);
}

/* Pointers to m's tensors sorted by name (document order among equals). */
static const struct mtensor **sorted(const struct manifest *m)
{
	const struct mtensor **v = malloc(((size_t)m->n + 1) * sizeof *v);
	if (!v)
		return NULL;
	for (int i = 0; i < m->n; i++)
		v[i] = &m->t[i];
	qsort(v, (size_t)m->n, sizeof *v, by_name);
	return v;
}

static int same_shape(const struct mtensor *a, const struct mtensor *b)
{
	return a->ndim == b->ndim &&
	       memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0;
}

int manifest_diff(const struct manifest *want, const struct manifest *have,
		  struct mdiff **out, int *n, struct err *e)
{
	*out = NULL;
	*n = 0;
	const struct mtensor **w = sorted(want), **h = sorted(have);
	/* match[i]: the tensor of have named like want->t[i], or NULL;
	 * extra[j]: have->t[j] matches nothing in want. */
	const struct mtensor **match = calloc((size_t)want->n + 1, sizeof *match);
	char *extra = calloc((size_t)have->n + 1, 1);
	struct mdiff *d = malloc(((size_t)want->n + (size_t)have->n + 1) * sizeof *d);
	int rc = -1;
	if (!w || !h || !match || !extra || !d) {
		err_set(e, "out of memory");
		goto out;
	}
	int i = 0, j = 0;
	while (i < want->n || j < have->n) {
		int c = i == want->n ? 1 : j == have->n ? -1 :
			strcmp(w[i]->name, h[j]->name);
		if (c < 0) {
			i++;
		} else if (c > 0) {
			extra[h[j] - have->t] = 1;
			j++;
		} else {
			match[w[i] - want->t] = h[j];
			i++;
			j++;
		}
	}
	int k = 0;
	for (i = 0; i < want->n; i++) {
		if (!match[i])
			d[k++] = (struct mdiff){ .kind = MDIFF_MISSING, .want = &want->t[i] };
		else if (!same_shape(&want->t[i], match[i]))
			d[k++] = (struct mdiff){ .kind = MDIFF_SHAPE, .want = &want->t[i],
						  .have = match[i] };
	}
	for (j = 0; j < have->n; j++)
		if (extra[j])
			d[k++] = (struct mdiff){ .kind = MDIFF_UNEXPECTED, .have = &have->t[j] };
	if (k) {
		*out = d;
		d = NULL;
	}
	*n = k;
	rc = 0;
out:
	free(w);
	free(h);
	free(match);
	free(extra);
	free(d);
	return rc;
}

int manifest_check(const struct manifest *want, const struct manifest *have,
		   const char *name, const char *config, struct err *e)
{
	struct mdiff *d;
	int nd;
	if (manifest_diff(want, have, &d, &nd, e) < 0)
		return -1;
	int rc = 0;
	if (nd > 0) {
		char s1[MTENSOR_SHAPE_STR], s2[MTENSOR_SHAPE_STR], q[160];
		const char *plural = nd > 1 ? "s" : "";
		const struct mtensor *t = d[0].kind == MDIFF_MISSING ? d[0].want : d[0].have;
		json_quote(q, sizeof q, t->name);
		switch (d[0].kind) {
		case MDIFF_MISSING:
			rc = err_set(e, "%s: tensor %s: missing (%d difference%s from %s)", name,
				     q, nd, plural, config);
			break;
		case MDIFF_UNEXPECTED:
			rc = err_set(e, "%s: tensor %s: unexpected (%d difference%s from %s)",
				     name, q, nd, plural, config);
			break;
		case MDIFF_SHAPE:
			rc = err_set(e, "%s: tensor %s: shape %s, %s implies %s",
				     name, q, mtensor_shape_str(d[0].have, s1), config,
				     mtensor_shape_str(d[0].want, s2));
			break;
		}
	}
	free(d);
	return rc;
}
