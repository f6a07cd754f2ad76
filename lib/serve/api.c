/* api: OpenAI requests in, responses out (api.h). */
#include "serve/api.h"

#include "core/jsonutil.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- requests ---- */

static int bad(char *param, const char *name, struct err *e, const char *fmt, const char *v)
{
	snprintf(param, API_PARAM_MAX, "%s", name);
	return err_set(e, fmt, name, v);
}

/* obj.key, or NULL when absent or null. */
static const cJSON *field(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNull(v) ? NULL : v;
}

/* A number in [min, max] into *out; absent leaves *out. */
static int get_num(const cJSON *obj, const char *key, double min, double max, double *out,
		   char *param, struct err *e)
{
	const cJSON *v = field(obj, key);
	char b[64];
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v))
		return bad(param, key, e, "%s: expected a number, got %s",
			   json_print_scalar(b, sizeof b, v));
	if (!(v->valuedouble >= min && v->valuedouble <= max)) {
		snprintf(b, sizeof b, "%s is out of range [%g, %g]", v->valuestring ?
			 v->valuestring : "the value", min, max);
		return bad(param, key, e, "%s: %s", b);
	}
	*out = v->valuedouble;
	return 0;
}

/* An integer in [min, max] into *out; absent leaves *out. */
static int get_int(const cJSON *obj, const char *key, long min, long max, long *out,
		   char *param, struct err *e)
{
	const cJSON *v = field(obj, key);
	char b[96];
	int64_t x;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || json_integer(v, &x) < 0)
		return bad(param, key, e, "%s: expected an integer, got %s",
			   json_print_scalar(b, sizeof b, v));
	if (x < min || x > max || x == INT64_MAX || x == INT64_MIN) {  /* (or beyond int64) */
		snprintf(b, sizeof b, "%s is out of range [%ld, %ld]", v->valuestring, min, max);
		return bad(param, key, e, "%s: %s", b);
	}
	*out = (long)x;
	return 0;
}

static int get_bool(const cJSON *obj, const char *key, int *out, char *param, struct err *e)
{
	const cJSON *v = field(obj, key);
	char b[64];
	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return bad(param, key, e, "%s: expected true or false, got %s",
			   json_print_scalar(b, sizeof b, v));
	*out = cJSON_IsTrue(v);
	return 0;
}

/* Fields refused rather than ignored: what they ask is not done here. */
static int unsupported(const cJSON *j, char *param, struct err *e)
{
	const cJSON *v;
	double x;
	static const char *const tools[] = { "tools", "functions" };
	for (int i = 0; i < 2; i++)
		if ((v = field(j, tools[i])) && (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > 0))
			return bad(param, tools[i], e, "%s: tools and function calling are not "
				   "supported%s", "");
	static const char *const choice[] = { "tool_choice", "function_call" };
	for (int i = 0; i < 2; i++)
		if ((v = field(j, choice[i])) &&
		    !(cJSON_IsString(v) && !strcmp(v->valuestring, "none")))
			return bad(param, choice[i], e, "%s: tools and function calling are not "
				   "supported%s", "");
	static const char *const one[] = { "n", "best_of" };
	for (int i = 0; i < 2; i++) {
		long n = 1;
		if (get_int(j, one[i], 1, 1, &n, param, e) < 0)
			return err_set(e, "%s: only 1 choice is supported", one[i]);
	}
	static const char *const pen[] = { "frequency_penalty", "presence_penalty" };
	for (int i = 0; i < 2; i++) {
		x = 0;
		if (get_num(j, pen[i], -2, 2, &x, param, e) < 0)
			return -1;
		if (x != 0)
			return bad(param, pen[i], e, "%s: only 0 is supported (repeat_penalty is "
				   "the repetition penalty%s)", ", transformers' multiplicative one");
	}
	if ((v = field(j, "response_format"))) {
		const cJSON *t = cJSON_IsObject(v) ? field(v, "type") : NULL;
		if (!cJSON_IsString(t) || strcmp(t->valuestring, "text"))
			return bad(param, "response_format", e, "%s: only {\"type\": \"text\"} is "
				   "supported%s", "");
	}
	int echo = 0;
	if (get_bool(j, "echo", &echo, param, e) < 0)
		return -1;
	if (echo)
		return bad(param, "echo", e, "%s: echoing the prompt is not supported%s", "");
	if ((v = field(j, "suffix")))
		return bad(param, "suffix", e, "%s: not supported%s", "");
	if ((v = field(j, "logit_bias")) && (!cJSON_IsObject(v) || v->child))
		return bad(param, "logit_bias", e, "%s: not supported%s", "");
	/* llama-server's and OpenAI's other ways to shape the output */
	static const char *const shape[] = { "grammar", "json_schema", "prediction", "audio" };
	for (size_t i = 0; i < sizeof shape / sizeof *shape; i++)
		if (field(j, shape[i]))
			return bad(param, shape[i], e, "%s: not supported%s", "");
	if ((v = field(j, "modalities")) &&
	    !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 && cJSON_IsString(v->child) &&
	      !strcmp(v->child->valuestring, "text")))
		return bad(param, "modalities", e, "%s: only [\"text\"] is supported%s", "");
	long mirostat = 0;
	if (get_int(j, "mirostat", 0, 2, &mirostat, param, e) < 0)
		return -1;
	if (mirostat)
		return bad(param, "mirostat", e, "%s: only 0 is supported%s", "");
	x = 1;
	if (get_num(j, "typical_p", 0, 1, &x, param, e) < 0)
		return -1;
	if (x != 1)
		return bad(param, "typical_p", e, "%s: only 1 is supported%s", "");
	return 0;
}

static int get_stops(struct api_req *r, const cJSON *j, const struct api_limits *lim,
		     char *param, struct err *e)
{
	const cJSON *v = field(j, "stop"), *it;
	if (!v)
		return 0;
	int n = cJSON_IsString(v) ? 1 : cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
	if (n < 0)
		return bad(param, "stop", e, "%s: expected a string or an array of strings%s", "");
	if (n > lim->max_stops) {
		char b[32];
		snprintf(b, sizeof b, "%ld", lim->max_stops);
		return bad(param, "stop", e, "%s: at most %s stop strings", b);
	}
	if (!(r->stops = calloc((size_t)n + 1, sizeof *r->stops)))
		return err_set(e, "out of memory");
	int k = 0;
	if (cJSON_IsString(v)) {
		it = v;
		goto one;
	}
	cJSON_ArrayForEach(it, v) {
one:
		if (!cJSON_IsString(it))
			return bad(param, "stop", e, "%s: expected a string or an array of "
				   "strings%s", "");
		if (!*it->valuestring)
			continue;  /* an empty stop string stops nothing */
		if (!(r->stops[k++] = strdup(it->valuestring)))
			return err_set(e, "out of memory");
		r->n_stops = k;
		if (it == v)
			break;
	}
	return 0;
}

/* A prompt of token ids: an array of integers in [0, 2^31), each checked
 * against the tokenizer later (api_prompt_ids). */
static int prompt_ids(const cJSON *a, struct idvec *ids, char *param, struct err *e)
{
	size_t i = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, a) {
		double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
		if (!(d >= 0 && d <= INT32_MAX && d == (int32_t)d)) {
			snprintf(param, API_PARAM_MAX, "prompt");
			return err_set(e, "prompt[%zu]: expected a token id (an integer >= 0)", i);
		}
		if (idvec_push(ids, (int32_t)d) < 0)
			return err_set(e, "out of memory");
		i++;
	}
	return 0;
}

int api_parse(struct api_req *r, enum api_kind kind, const char *body, size_t n,
	      const struct api_limits *lim, char *param, struct err *e)
{
	*r = (struct api_req){ .kind = kind, .max_tokens = lim->default_tokens,
			       .sp = lim->defaults };
	*param = 0;
	cJSON *j;
	if (json_parse_text(&j, body, n, "the request body", e) < 0)
		return -1;
	int rc = -1;
	const cJSON *v;
	if (!cJSON_IsObject(j)) {
		err_set(e, "the request body: expected a JSON object");
		goto out;
	}
	if ((v = field(j, "model")) && !cJSON_IsString(v)) {
		bad(param, "model", e, "%s: expected a string%s", "");
		goto out;
	}
	if (unsupported(j, param, e) < 0)
		goto out;
	if (get_bool(j, "stream", &r->stream, param, e) < 0 ||
	    get_bool(j, "ignore_eos", &r->ignore_eos, param, e) < 0)
		goto out;
	if ((v = field(j, "stream_options"))) {
		if (!cJSON_IsObject(v)) {
			bad(param, "stream_options", e, "%s: expected an object%s", "");
			goto out;
		}
		if (get_bool(v, "include_usage", &r->include_usage, param, e) < 0)
			goto out;
	}
	/* llama-server's own name first, as it takes them; -1 there is "no
	 * limit", here --tokens-limit */
	long np = 0;
	if (get_int(j, "max_tokens", 0, lim->max_tokens, &r->max_tokens, param, e) < 0 ||
	    get_int(j, "max_completion_tokens", 0, lim->max_tokens, &r->max_tokens, param, e) < 0 ||
	    get_int(j, "n_predict", -1, lim->max_tokens, &np, param, e) < 0)
		goto out;
	if (field(j, "n_predict"))
		r->max_tokens = np < 0 ? lim->max_tokens : np;
	struct sampler_params *p = &r->sp.over;
	long seed = -1, top_k = p->top_k;
	if (get_num(j, "temperature", 0, 100, &p->temperature, param, e) < 0 ||
	    get_num(j, "top_p", 0, 1, &p->top_p, param, e) < 0 ||
	    get_num(j, "min_p", 0, 1, &p->min_p, param, e) < 0 ||
	    get_num(j, "repeat_penalty", 0.001, 1000, &p->repetition_penalty, param, e) < 0 ||
	    get_int(j, "top_k", 0, INT32_MAX, &top_k, param, e) < 0 ||
	    get_int(j, "seed", -1, INT64_MAX - 1, &seed, param, e) < 0)
		goto out;  /* -1: a seed drawn from the system, as llama-server's */
	p->top_k = (int)top_k;
	if (seed >= 0) {
		r->sp.seed = (uint64_t)seed;
		r->has_seed = 1;
	}
	if (get_stops(r, j, lim, param, e) < 0)
		goto out;
	long top = 0;
	if (kind == API_CHAT) {
		if (get_bool(j, "logprobs", &r->logprobs, param, e) < 0 ||
		    get_int(j, "top_logprobs", 0, SLOT_MAX_TOP, &top, param, e) < 0)
			goto out;
		if (top > 0 && !r->logprobs) {
			bad(param, "top_logprobs", e, "%s: needs \"logprobs\": true%s", "");
			goto out;
		}
	} else {
		top = -1;
		if (get_int(j, "logprobs", 0, SLOT_MAX_TOP, &top, param, e) < 0)
			goto out;
		r->logprobs = top >= 0;
		top = top < 0 ? 0 : top;
	}
	r->top_logprobs = (int)top;
	if (kind == API_CHAT) {
		v = cJSON_GetObjectItemCaseSensitive(j, "messages");
		if (!cJSON_IsArray(v)) {
			bad(param, "messages", e, "%s: expected an array of messages%s", "");
			goto out;
		}
		if (cJSON_GetArraySize(v) > lim->max_messages) {
			char b[32];
			snprintf(b, sizeof b, "%ld", lim->max_messages);
			bad(param, "messages", e, "%s: more than %s messages (serve --max-messages)", b);
			goto out;
		}
		if (chat_from_json(v, &r->msgs, &r->n_msgs, e) < 0) {
			snprintf(param, API_PARAM_MAX, "messages");
			if (strncmp(e->msg, "messages", 8))
				err_prefix(e, "messages");
			goto out;
		}
	} else {
		v = cJSON_GetObjectItemCaseSensitive(j, "prompt");
		/* one prompt: a string or ids, alone or as an array's one item */
		if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1 &&
		    (cJSON_IsString(v->child) || cJSON_IsArray(v->child)))
			v = v->child;
		if (cJSON_IsArray(v) && (cJSON_IsString(v->child) || cJSON_IsArray(v->child))) {
			bad(param, "prompt", e, "%s: one prompt per request%s", "");
			goto out;
		}
		if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0) {
			if (prompt_ids(v, &r->ids, param, e) < 0)
				goto out;
		} else if (!cJSON_IsString(v)) {
			bad(param, "prompt", e, "%s: expected a string or an array of token ids%s", "");
			goto out;
		} else if (!*v->valuestring) {
			bad(param, "prompt", e, "%s: empty%s", "");
			goto out;
		} else if (!(r->prompt = strdup(v->valuestring))) {
			err_set(e, "out of memory");
			goto out;
		}
	}
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

void api_req_free(struct api_req *r)
{
	for (int i = 0; i < r->n_stops; i++)
		free(r->stops[i]);
	free(r->stops);
	chat_free(r->msgs, r->n_msgs);
	free(r->prompt);
	idvec_free(&r->ids);
	*r = (struct api_req){ 0 };
}

int api_prompt_ids(const struct api_req *r, struct tokenizer *t, struct idvec *out,
		   struct err *e)
{
	if (r->kind == API_COMPLETION && !r->prompt) {
		for (size_t i = 0; i < r->ids.n; i++) {
			if (r->ids.v[i] >= tok_n_ids(t))
				return err_set(e, "prompt[%zu]: %d is not a token id (0 to %d)", i,
					       (int)r->ids.v[i], (int)tok_n_ids(t) - 1);
			if (idvec_push(out, r->ids.v[i]) < 0)
				return err_set(e, "out of memory");
		}
		return 0;
	}
	if (r->kind == API_COMPLETION)
		return tok_encode(t, (const unsigned char *)r->prompt, strlen(r->prompt), 0, out,
				  NULL, e);
	char *text;
	size_t len;
	if (chat_render(r->msgs, r->n_msgs, 1, &text, &len, e) < 0)
		return -1;
	int rc = tok_encode(t, (const unsigned char *)text, len, 0, out, NULL, e);
	free(text);
	return rc;
}

/* ---- responses ---- */

/* s[0..n) as a JSON string's content: bytes that are not UTF-8 become
 * U+FFFD, so that the JSON written is valid. */
static cJSON *text_json(const char *s, size_t n)
{
	struct sbuf b = { 0 };
	for (size_t i = 0; i < n;) {
		int32_t cp;
		int len = utf8_decode((const unsigned char *)s + i, n - i, &cp);
		if (len <= 0) {
			sbuf_put(&b, "\xEF\xBF\xBD", 3);
			i++;
		} else {
			sbuf_put(&b, s + i, (size_t)len);
			i += (size_t)len;
		}
	}
	cJSON *j = cJSON_CreateString(b.p ? b.p : "");
	free(b.p);
	return j;
}

static char *print(cJSON *j)
{
	char *s = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	return s;
}

char *api_error_json(const char *msg, const char *type, const char *param, const char *code)
{
	cJSON *j = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(j, "error");
	cJSON_AddItemToObject(o, "message", text_json(msg, strlen(msg)));
	cJSON_AddStringToObject(o, "type", type);
	if (param && *param)
		cJSON_AddStringToObject(o, "param", param);
	else
		cJSON_AddNullToObject(o, "param");
	if (code)
		cJSON_AddStringToObject(o, "code", code);
	else
		cJSON_AddNullToObject(o, "code");
	return print(j);
}

static cJSON *model_object(const char *name, long created)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "id", name);
	cJSON_AddStringToObject(m, "object", "model");
	cJSON_AddNumberToObject(m, "created", (double)created);
	cJSON_AddStringToObject(m, "owned_by", "qwenpipe");
	return m;
}

char *api_models_json(const char *name, long created)
{
	cJSON *j = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(j, "data");
	cJSON_AddStringToObject(j, "object", "list");
	cJSON_AddItemToArray(a, model_object(name, created));
	return print(j);
}

char *api_model_json(const char *name, long created)
{
	return print(model_object(name, created));
}

static atomic_long next_id;

int api_gen_begin(struct api_gen *g, const struct api_req *r, struct slot *sl,
		  const struct tokenizer *t, const char *model, const int32_t *ids, int n,
		  struct err *e)
{
	*g = (struct api_gen){ .r = r, .sl = sl, .t = t, .model = model, .n_prompt = n,
			       .created = (long)time(NULL),
			       .st = { .stops = (const char *const *)r->stops, .n = r->n_stops } };
	snprintf(g->id, sizeof g->id, "%s-%ld", r->kind == API_CHAT ? "chatcmpl" : "cmpl",
		 atomic_fetch_add(&next_id, 1) + 1);
	int keep = slot_begin(sl, ids, n, &r->sp, e);
	if (keep < 0)
		return -1;
	g->cached = keep;
	if (r->max_tokens == 0) {
		g->finish = "length";
		slot_end(sl, e);
	}
	return 0;
}

/* A token's bytes as JSON: "token" (its text) and "bytes". */
static void add_token(cJSON *o, const char *key, const struct tokenizer *t, int32_t id)
{
	size_t len;
	const unsigned char *b = tok_bytes(t, id, &len);
	cJSON_AddItemToObject(o, key, text_json((const char *)b, len));
	if (!strcmp(key, "token")) {
		cJSON *a = cJSON_AddArrayToObject(o, "bytes");
		for (size_t i = 0; i < len; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(b[i]));
	}
}

/* The log-probabilities of token tk, in the shape of the endpoint: a chat
 * "content" item, or a completion's parallel arrays' entries (added to
 * the arrays in lp). */
static cJSON *chat_lp_item(const struct api_gen *g, const struct slot_token *tk)
{
	cJSON *o = cJSON_CreateObject();
	add_token(o, "token", g->t, tk->id);
	cJSON_AddNumberToObject(o, "logprob", tk->logprob);
	cJSON *a = cJSON_AddArrayToObject(o, "top_logprobs");
	for (int i = 0; i < g->r->top_logprobs; i++) {
		cJSON *x = cJSON_CreateObject();
		add_token(x, "token", g->t, tk->top[i].id);
		cJSON_AddNumberToObject(x, "logprob", tk->top[i].x);
		cJSON_AddItemToArray(a, x);
	}
	return o;
}

static void completion_lp(const struct api_gen *g, const struct slot_token *tk, cJSON *lp,
			  long offset)
{
	size_t len;
	const unsigned char *b = tok_bytes(g->t, tk->id, &len);
	cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "tokens"), text_json((const char *)b, len));
	cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "token_logprobs"),
			     cJSON_CreateNumber(tk->logprob));
	cJSON *top = cJSON_CreateObject();
	for (int i = 0; i < g->r->top_logprobs; i++) {
		b = tok_bytes(g->t, tk->top[i].id, &len);
		cJSON *k = text_json((const char *)b, len);
		if (!cJSON_GetObjectItemCaseSensitive(top, k->valuestring))
			cJSON_AddNumberToObject(top, k->valuestring, tk->top[i].x);
		cJSON_Delete(k);
	}
	cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "top_logprobs"), top);
	cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "text_offset"), cJSON_CreateNumber((double)offset));
}

static cJSON *completion_lp_new(void)
{
	cJSON *lp = cJSON_CreateObject();
	cJSON_AddArrayToObject(lp, "tokens");
	cJSON_AddArrayToObject(lp, "token_logprobs");
	cJSON_AddArrayToObject(lp, "top_logprobs");
	cJSON_AddArrayToObject(lp, "text_offset");
	return lp;
}

/* One step: draws a token, feeds it back unless the generation stops
 * there, and appends its released text to text. *tk gets the token
 * (tk->id -1 when none was drawn). Returns 0 or -1. */
static int step(struct api_gen *g, struct slot_token *tk, struct sbuf *text, struct err *e)
{
	tk->id = -1;
	tk->eos = 0;
	tk->n_top = g->r->logprobs ? 1 + g->r->top_logprobs : 0;
	int r = slot_next(g->sl, tk, e);
	if (r < 0)
		return -1;
	if (g->r->ignore_eos)
		tk->eos = 0;
	if (r == 0) {
		tk->id = -1;
		g->finish = "length";  /* forward ended the stream: the context is full */
	} else if (tk->eos) {
		tk->id = -1;
		g->finish = "stop";
	} else {
		g->n_out++;
		size_t len;
		const unsigned char *b = tok_bytes(g->t, tk->id, &len);
		unsigned char buf[512];
		while (len > 0 && !g->finish) {
			size_t k = len < sizeof buf - 3 ? len : sizeof buf - 3;
			size_t m = utf8_hold_push(&g->hold, b, k, buf);
			if (stoptext_push(&g->st, buf, m, text))
				g->finish = "stop";
			b += k;
			len -= k;
		}
		if (!g->finish && (g->n_out >= g->r->max_tokens || tk->last))
			g->finish = "length";
	}
	if (g->finish) {
		if (!strcmp(g->finish, "length") || tk->eos) {
			unsigned char rest[4];
			size_t m = utf8_hold_flush(&g->hold, rest);
			if (!stoptext_push(&g->st, rest, m, text))
				stoptext_flush(&g->st, text);
		}
		return slot_end(g->sl, e);
	}
	if (text->oom || g->st.held.oom)
		return err_set(e, "out of memory");
	return slot_feed(g->sl, tk->id, e);
}

static void add_usage(const struct api_gen *g, cJSON *j)
{
	cJSON *u = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(u, "prompt_tokens", g->n_prompt);
	cJSON_AddNumberToObject(u, "completion_tokens", (double)g->n_out);
	cJSON_AddNumberToObject(u, "total_tokens", (double)(g->n_prompt + g->n_out));
	cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
	cJSON_AddNumberToObject(d, "cached_tokens", g->cached);
	cJSON_AddNumberToObject(u, "positions_computed", g->sl->computed);
}

/* The frame of a response or chunk: id, object, created, model, one
 * choice (returned). */
static cJSON *frame(const struct api_gen *g, const char *object, cJSON **choice)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", g->id);
	cJSON_AddStringToObject(j, "object", object);
	cJSON_AddNumberToObject(j, "created", (double)g->created);
	cJSON_AddStringToObject(j, "model", g->model);
	cJSON *a = cJSON_AddArrayToObject(j, "choices");
	if (choice) {
		*choice = cJSON_CreateObject();
		cJSON_AddNumberToObject(*choice, "index", 0);
		cJSON_AddItemToArray(a, *choice);
	}
	return j;
}

static void finish_reason(const struct api_gen *g, cJSON *c)
{
	if (g->finish)
		cJSON_AddStringToObject(c, "finish_reason", g->finish);
	else
		cJSON_AddNullToObject(c, "finish_reason");
}

static void event(struct sbuf *out, cJSON *j)
{
	char *s = print(j);
	sbuf_puts(out, "data: ");
	sbuf_puts(out, s ? s : "{}");
	sbuf_puts(out, "\n\n");
	free(s);
}

/* One streamed chunk: text (and the token's log-probabilities). */
static void chunk(struct api_gen *g, const char *text, size_t n, const struct slot_token *tk,
		  struct sbuf *out)
{
	int chat = g->r->kind == API_CHAT;
	cJSON *c, *j = frame(g, chat ? "chat.completion.chunk" : "text_completion", &c);
	if (chat) {
		cJSON *d = cJSON_AddObjectToObject(c, "delta");
		if (g->state == 0)
			cJSON_AddStringToObject(d, "role", "assistant");
		if (n || g->state == 0)
			cJSON_AddItemToObject(d, "content", text_json(text, n));
	} else {
		cJSON_AddItemToObject(c, "text", text_json(text, n));
	}
	if (tk && tk->id >= 0 && g->r->logprobs) {
		cJSON *lp;
		if (chat) {
			lp = cJSON_CreateObject();
			cJSON *a = cJSON_AddArrayToObject(lp, "content");
			cJSON_AddItemToArray(a, chat_lp_item(g, tk));
		} else {
			lp = completion_lp_new();
			completion_lp(g, tk, lp, g->lp_offset);
		}
		cJSON_AddItemToObject(c, "logprobs", lp);
	} else {
		cJSON_AddNullToObject(c, "logprobs");
	}
	g->lp_offset += (long)n;
	finish_reason(g, c);
	event(out, j);
}

int api_gen_stream(struct api_gen *g, struct sbuf *out, struct err *e)
{
	if (g->state == 2)
		return 0;
	if (g->state == 0 && g->r->kind == API_CHAT) {
		const char *f = g->finish;
		g->finish = NULL;
		chunk(g, "", 0, NULL, out);  /* the role */
		g->finish = f;
	}
	g->state = 1;
	if (!g->finish) {
		struct slot_token tk;
		struct sbuf text = { 0 };
		int rc = step(g, &tk, &text, e);
		const char *f = g->finish;
		if (rc == 0 && (tk.id >= 0 || text.n)) {
			g->finish = NULL;  /* the finish reason has a chunk of its own */
			chunk(g, text.p, text.n, &tk, out);
			g->finish = f;
		}
		free(text.p);
		if (rc < 0)
			return -1;
		if (!g->finish)
			return out->oom ? err_set(e, "out of memory") : 1;
	}
	chunk(g, "", 0, NULL, out);
	if (g->r->include_usage) {
		cJSON *j = frame(g, g->r->kind == API_CHAT ? "chat.completion.chunk" :
				 "text_completion", NULL);
		add_usage(g, j);
		event(out, j);
	}
	sbuf_puts(out, "data: [DONE]\n\n");
	g->state = 2;
	return out->oom ? err_set(e, "out of memory") : 0;
}

int api_gen_run(struct api_gen *g, struct sbuf *out, int (*gone)(void *arg), void *arg,
		struct err *e)
{
	int chat = g->r->kind == API_CHAT;
	cJSON *lp = NULL, *items = NULL;
	if (g->r->logprobs) {
		if (chat) {
			lp = cJSON_CreateObject();
			items = cJSON_AddArrayToObject(lp, "content");
		} else {
			lp = completion_lp_new();
		}
	}
	while (!g->finish) {
		struct slot_token tk;
		size_t before = g->text.n;
		if (gone(arg)) {
			cJSON_Delete(lp);
			return 1;
		}
		if (step(g, &tk, &g->text, e) < 0) {
			cJSON_Delete(lp);
			return -1;
		}
		if (tk.id >= 0 && lp) {
			if (chat)
				cJSON_AddItemToArray(items, chat_lp_item(g, &tk));
			else
				completion_lp(g, &tk, lp, (long)before);
		}
	}
	cJSON *c, *j = frame(g, chat ? "chat.completion" : "text_completion", &c);
	cJSON *text = text_json(g->text.p ? g->text.p : "", g->text.n);
	if (chat) {
		cJSON *m = cJSON_AddObjectToObject(c, "message");
		cJSON_AddStringToObject(m, "role", "assistant");
		cJSON_AddItemToObject(m, "content", text);
	} else {
		cJSON_AddItemToObject(c, "text", text);
	}
	if (lp)
		cJSON_AddItemToObject(c, "logprobs", lp);
	else
		cJSON_AddNullToObject(c, "logprobs");
	finish_reason(g, c);
	add_usage(g, j);
	char *s = print(j);
	if (!s)
		return err_set(e, "out of memory");
	sbuf_puts(out, s);
	free(s);
	return out->oom || g->text.oom ? err_set(e, "out of memory") : 0;
}

void api_gen_free(struct api_gen *g)
{
	struct err e;
	if (g->sl)
		slot_end(g->sl, &e);
	stoptext_free(&g->st);
	free(g->text.p);
	g->sl = NULL;
}
