/* serve: the OpenAI-compatible HTTP API over the pipe protocol.
 *
 *   serve MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [flags]
 *
 * Each of the --parallel slots is one `forward MODEL` child process, a
 * conversation context driven as docs/chat.md describes
 * (lib/serve/slot.h); serve tokenizes and renders the chat template itself
 * and samples in-process, so it is the protocol's client, and a request
 * whose prompt extends what a slot's context holds computes only the new
 * positions. HTTP is libmicrohttpd's (a thread per connection, with its
 * timeouts); the requests and responses are lib/serve/api.h's.
 *
 * Exit status: 0 never (it serves until a signal); 1 a model or tokenizer
 * that cannot be loaded, an address that cannot be bound; 2 usage; 130,
 * 143 after SIGINT, SIGTERM (the slots' forwards are ended first).
 */
#define _GNU_SOURCE  /* pthread_sigmask, getaddrinfo's flags */
#include "cli/cli.h"
#include "cli/datadir.h"
#include "core/slurp.h"
#include "format/gguf.h"
#include "serve/api.h"
#include "serve/slots.h"
#include "text/tokmodel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { OPT_HOST = CLI_LONG, OPT_PORT, OPT_PARALLEL, OPT_QUEUE, OPT_API_KEY,
       OPT_API_KEY_FILE, OPT_MAX_BODY, OPT_MAX_MESSAGES, OPT_MAX_TOKENS, OPT_TIMEOUT,
       OPT_ALIAS, OPT_F32, OPT_MMAP, OPT_ACT8, OPT_B16ACT, OPT_GREEDY, OPT_TEMP,
       OPT_TOP_P, OPT_MIN_P, OPT_PENALTY };

static const struct cli_opt opts[] = {
	{ 0, "MODEL", NULL, "a model directory, .safetensors, container or GGUF file" },
	{ OPT_HOST, "host", "ADDR", "the address to listen on (default 127.0.0.1: this\n"
	  "machine only; 0.0.0.0 or :: for every interface)" },
	{ OPT_PORT, "port", "N", "the TCP port (default 8080; 0: any free one, named\n"
	  "on stderr)" },
	{ OPT_PARALLEL, "parallel", "N", "slots: requests answered at once, each with a\n"
	  "context (a forward) of its own (default 1)" },
	{ OPT_QUEUE, "queue", "N", "requests that may wait for a slot; one more is\n"
	  "answered 503 with Retry-After (default 16)" },
	{ OPT_API_KEY, "api-key", "KEY", "require \"Authorization: Bearer KEY\" (401 otherwise)\n"
	  "on /v1/ (/health stays open)" },
	{ OPT_API_KEY_FILE, "api-key-file", "FILE", "the same, the key read from FILE's first line\n"
	  "(so that it is not on the command line)" },
	{ OPT_MAX_BODY, "max-body", "BYTES", "the largest request body (default 1048576; 413\n"
	  "beyond)" },
	{ OPT_MAX_MESSAGES, "max-messages", "N", "the most messages in a chat request (default 256)" },
	{ OPT_MAX_TOKENS, "tokens-limit", "N", "the largest max_tokens a request may ask (default\n"
	  "4096)" },
	{ 'n', "tokens|n-predict|predict", "N", "tokens per answer when a request does not say\n"
	  "(default 200, as scripts/generate, or\n"
	  "--tokens-limit if less)" },
	{ OPT_TIMEOUT, "timeout", "S", "close a connection idle for S seconds: a client\n"
	  "that stops sending its request or reading its\n"
	  "answer (default 60)" },
	{ OPT_ALIAS, "alias", "NAME", "the model's name in the API (default: MODEL's\n"
	  "file or directory name)" },
	{ 't', "threads", "N", "forward: threads per slot" },
	{ 'c', "ctx|ctx-size", "N", "forward: positions per slot's context" },
	{ OPT_F32, "f32", NULL, "forward: float32 weights" },
	{ OPT_MMAP, "mmap", NULL, "forward: map the weights" },
	{ OPT_ACT8, "int8-activations", NULL, "forward: int8 activations (quantized models)" },
	{ OPT_B16ACT, "bf16-activations", NULL, "forward: bf16 activations" },
	{ OPT_GREEDY, "greedy", NULL, "default sampling: the most probable token" },
	{ OPT_TEMP, "temperature|temp", "T", "default temperature" },
	{ 'k', "top-k", "K", "default top-k" },
	{ OPT_TOP_P, "top-p", "P", "default top-p" },
	{ OPT_MIN_P, "min-p", "P", "default min-p" },
	{ OPT_PENALTY, "repeat-penalty", "R", "default repetition penalty" },
	{ 'v', "verbose", NULL, "a line per request on stderr" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "serve",
	.usage = "serve MODEL [--host ADDR] [--port N] [--parallel N] [--api-key KEY] [FLAGS...]",
	.about = "Serves the model over HTTP with the OpenAI API, as llama-server does:\n"
		 "POST /v1/chat/completions (streamed or not), POST /v1/completions,\n"
		 "GET /v1/models[/NAME], GET /health; answers may be read from any\n"
		 "origin (CORS). Each slot is a forward process that keeps\n"
		 "its context, so a conversation's next turn computes only its new\n"
		 "positions. The sampling defaults are the model's generation_config.json,\n"
		 "then these flags, then each request's fields.\n",
	.opts = opts,
	.notes = "docs/serve.md lists the fields supported and those refused (tools and\n"
		 "function calling among them).\n",
};

/* ---- the server's state ---- */

static struct {
	const char *model, *host, *alias;
	long port, parallel, queue, max_body, timeout;
	char *key;
	int verbose;
	struct api_limits lim;
	struct tokenizer *tok;
	pthread_mutex_t tok_mu;
	struct slots slots;
	long created;
} S = {
	.host = "127.0.0.1", .port = 8080, .parallel = 1, .queue = 16, .max_body = 1 << 20,
	.timeout = 60,
	.lim = { .max_tokens = 4096, .default_tokens = 200, .max_messages = 256, .max_stops = 16,
		 .defaults = { .over = { .temperature = NAN, .top_p = NAN, .min_p = NAN,
					 .repetition_penalty = NAN, .top_k = -1 } } },
	.tok_mu = PTHREAD_MUTEX_INITIALIZER,
};

/* forward's command line */
static char *fwd_argv[20];  /* exe, model, --draft 0, fwd_flags, NULL */
static int fwd_argc;

static void fwd_arg(const char *a)
{
	if (!(fwd_argv[fwd_argc++] = strdup(a)))
		cli_die("out of memory");
}

static void parse_args(int argc, char **argv)
{
	const char *v, *key_file = NULL;
	char *fwd_flags[12];
	int n_fwd = 0, n_given = 0, c;
	while ((c = cli_getopt(argc, argv, &v)) != -1) {
		switch (c) {
		case OPT_HOST: S.host = v; break;
		case OPT_PORT: S.port = cli_flag_long("--port", v, 0, 65535); break;
		case OPT_PARALLEL: S.parallel = cli_flag_long("--parallel", v, 1, 64); break;
		case OPT_QUEUE: S.queue = cli_flag_long("--queue", v, 0, 4096); break;
		case OPT_API_KEY: S.key = strdup(v); break;
		case OPT_API_KEY_FILE: key_file = v; break;
		case OPT_MAX_BODY: S.max_body = cli_flag_long("--max-body", v, 64, 1L << 30); break;
		case OPT_MAX_MESSAGES:
			S.lim.max_messages = cli_flag_long("--max-messages", v, 1, 1 << 20); break;
		case OPT_MAX_TOKENS:
			S.lim.max_tokens = cli_flag_long("--tokens-limit", v, 0, INT32_MAX); break;
		case 'n': S.lim.default_tokens = cli_flag_long("--tokens", v, 0, INT32_MAX);
			n_given = 1; break;
		case OPT_TIMEOUT: S.timeout = cli_flag_long("--timeout", v, 1, 86400); break;
		case OPT_ALIAS:
			if (!*v)
				cli_die_usage("--alias: the model's name is empty");
			S.alias = v;
			break;
		case 't': cli_flag_long("--threads", v, 1, 1024);
			fwd_flags[n_fwd++] = "--threads", fwd_flags[n_fwd++] = (char *)v; break;
		case 'c': cli_flag_long("--ctx", v, 1, INT32_MAX);
			fwd_flags[n_fwd++] = "--ctx", fwd_flags[n_fwd++] = (char *)v; break;
		case OPT_F32: fwd_flags[n_fwd++] = "--f32"; break;
		case OPT_MMAP: fwd_flags[n_fwd++] = "--mmap"; break;
		case OPT_ACT8: fwd_flags[n_fwd++] = "--int8-activations"; break;
		case OPT_B16ACT: fwd_flags[n_fwd++] = "--bf16-activations"; break;
		case OPT_GREEDY: S.lim.defaults.over.temperature = 0; break;
		case OPT_TEMP:
			S.lim.defaults.over.temperature = cli_flag_double("--temperature", v, 0, 100); break;
		case 'k': S.lim.defaults.over.top_k = (int)cli_flag_long("--top-k", v, 0, INT32_MAX); break;
		case OPT_TOP_P: S.lim.defaults.over.top_p = cli_flag_double("--top-p", v, 0, 1); break;
		case OPT_MIN_P: S.lim.defaults.over.min_p = cli_flag_double("--min-p", v, 0, 1); break;
		case OPT_PENALTY:
			S.lim.defaults.over.repetition_penalty =
				cli_flag_double("--repeat-penalty", v, 0.001, 1000); break;
		case 'v': S.verbose = 1; break;
		}
		if (n_fwd > 10)
			cli_die_usage("too many forward flags");
	}
	if (optind + 1 != argc)
		cli_die_usage(optind == argc ? "expected a model" : "unexpected argument '%s'",
			      argv[optind + 1 < argc ? optind + 1 : optind]);
	S.model = argv[optind];
	if (!n_given && S.lim.default_tokens > S.lim.max_tokens)
		S.lim.default_tokens = S.lim.max_tokens;
	if (S.lim.default_tokens > S.lim.max_tokens)
		cli_die_usage("--tokens %ld is more than --tokens-limit %ld",
			      S.lim.default_tokens, S.lim.max_tokens);
	if (key_file) {
		if (S.key)
			cli_die_usage("--api-key and --api-key-file: give one");
		size_t n;
		struct err e;
		char *s = slurp(key_file, &n, &e);
		if (!s)
			cli_die_err(&e);
		s[strcspn(s, "\r\n")] = 0;
		S.key = s;
	}
	if (S.key && !*S.key)
		cli_die_usage("%s: the API key is empty", key_file ? key_file : "--api-key");
	/* forward, beside this executable */
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 16);
	if (n <= 0)
		cli_die("/proc/self/exe: %s", strerror(errno));
	exe[n] = 0;
	strcpy(strrchr(exe, '/') + 1, "forward");
	if (access(exe, X_OK) < 0)
		cli_die("%s: %s (forward must be beside serve)", exe, strerror(errno));
	fwd_arg(exe);
	fwd_arg(S.model);
	/* the slots read one frame per token: no speculative batches */
	fwd_arg("--draft");
	fwd_arg("0");
	for (int i = 0; i < n_fwd; i++)
		fwd_arg(fwd_flags[i]);
}

/* The tokenizer scripts/generate gives tok: a GGUF file's own, a model
 * directory's tokenizer.json, else $QWENPIPE_TOKENIZER or the bundled one. */
static void load_tokenizer(void)
{
	static char bundled[PATH_MAX + 64];
	struct stat st;
	char tj[PATH_MAX + 32];
	snprintf(tj, sizeof tj, "%s/tokenizer.json", S.model);
	const char *path = NULL;
	if (gguf_sniff(S.model) || (stat(S.model, &st) == 0 && S_ISDIR(st.st_mode) && !access(tj, R_OK)))
		path = S.model;
	else if (getenv("QWENPIPE_TOKENIZER") && *getenv("QWENPIPE_TOKENIZER"))
		path = getenv("QWENPIPE_TOKENIZER");
	else if (!(path = datadir_find("qwen2.5-0.5b-instruct/tokenizer.json", bundled,
					sizeof bundled)))
		cli_die("the bundled tokenizer (data/qwen2.5-0.5b-instruct/tokenizer.json) is not "
			"next to this executable");
	struct err e;
	if (!(S.tok = tokmodel_load(path, &e)) || tokmodel_check_template(tok_path(S.tok), &e) < 0)
		cli_die_err(&e);
}

/* ---- HTTP ---- */

/* The "Authorization: Bearer KEY" check, in time that does not depend on
 * where the given key first differs. */
static int authorized(struct MHD_Connection *con)
{
	if (!S.key)
		return 1;
	const char *h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7))  /* the scheme has no case (RFC 9110) */
		return 0;
	h += 7;
	size_t n = strlen(h), k = strlen(S.key);
	unsigned char d = n != k;
	for (size_t i = 0; i < k; i++)
		d |= (unsigned char)(S.key[i] ^ (i < n ? h[i] : 0));
	return d == 0;
}

/* Every answer may be read by a page from any origin (as llama-server's):
 * the server is a local tool, and the API key, where one is set, is what
 * guards it. */
static void allow_origin(struct MHD_Response *r)
{
	MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
}

/* A browser's CORS preflight (OPTIONS, on any path, without the key, which
 * a preflight never carries): the methods and the headers asked for. */
static enum MHD_Result send_preflight(struct MHD_Connection *con)
{
	const char *h = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
						    "Access-Control-Request-Headers");
	struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	allow_origin(r);
	MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
	MHD_add_response_header(r, "Access-Control-Allow-Headers",
				h && *h ? h : "Authorization, Content-Type");
	MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
	enum MHD_Result rc = MHD_queue_response(con, MHD_HTTP_NO_CONTENT, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result send_text(struct MHD_Connection *con, unsigned status,
				 const char *type, char *body)
{
	if (!body)
		body = strdup("{}");
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body,
								 MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", type);
	allow_origin(r);
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
		MHD_add_response_header(r, "Retry-After", "1");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	enum MHD_Result rc = MHD_queue_response(con, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* An OpenAI error object; code NULL (null) unless OpenAI has one for it. */
static enum MHD_Result send_error_code(struct MHD_Connection *con, unsigned status,
				       const char *msg, const char *param, const char *code)
{
	const char *type = status == MHD_HTTP_UNAUTHORIZED ? "authentication_error" :
			   status >= 500 ? "server_error" : "invalid_request_error";
	if (S.verbose || status >= 500)
		fprintf(stderr, "serve: %u: %s\n", status, msg);
	return send_text(con, status, "application/json",
			 api_error_json(msg, type, param, code));
}

static enum MHD_Result send_error(struct MHD_Connection *con, unsigned status,
				  const char *msg, const char *param)
{
	return send_error_code(con, status, msg, param, NULL);
}

/* {"status": "ok", "slots_idle", "slots_processing", "requests_waiting"},
 * as llama-server's /health said. */
static enum MHD_Result send_health(struct MHD_Connection *con)
{
	int busy, waiting;
	slots_count(&S.slots, &busy, &waiting);
	char *b = malloc(128);
	if (b)
		snprintf(b, 128, "{\"status\":\"ok\",\"slots_idle\":%d,\"slots_processing\":%d,"
			 "\"requests_waiting\":%d}", S.slots.n - busy, busy, waiting);
	return send_text(con, MHD_HTTP_OK, "application/json", b);
}

/* One connection's request. */
struct conn {
	enum api_kind kind;
	int route;            /* 0 not found, 1 a POST endpoint */
	int later;            /* not a POST: routed once its body is read */
	struct sbuf body;
	int too_big;
};

/* A streamed response: owned by libmicrohttpd's response from the start
 * of the stream until its free callback, which ends the generation and
 * frees the slot, also when the client went away mid-stream. */
struct stream {
	struct api_req req;
	struct api_gen gen;
	struct slot *sl;
	struct sbuf out;
	size_t at;
	int ended;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	(void)pos;
	while (s->at == s->out.n) {
		if (s->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		s->out.n = s->at = 0;
		struct err e;
		int r = api_gen_stream(&s->gen, &s->out, &e);
		if (r < 0) {
			fprintf(stderr, "serve: %s\n", e.msg);
			char *j = api_error_json(e.msg, "server_error", NULL, NULL);
			sbuf_puts(&s->out, "data: ");
			sbuf_puts(&s->out, j ? j : "{}");
			sbuf_puts(&s->out, "\n\n");
			free(j);
		}
		if (s->out.oom)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		s->ended = r <= 0;
	}
	size_t k = s->out.n - s->at < max ? s->out.n - s->at : max;
	memcpy(buf, s->out.p + s->at, k);
	s->at += k;
	return (ssize_t)k;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;
	api_gen_free(&s->gen);
	slots_release(&S.slots, s->sl);
	api_req_free(&s->req);
	free(s->out.p);
	free(s);
}

/* Whether the client of con has gone away: its socket reads as ended or
 * failed, as llama-server's HTTP library tells it. (A client that shuts
 * down only its sending side reads so too; HTTP clients do not.) Bytes
 * of a next, pipelined request mean it is still there. */
static int client_gone(void *con)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return 0;
	struct pollfd p = { .fd = ci->connect_fd, .events = POLLIN };
	if (poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
		return 1;
	char b;
	ssize_t r = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* A complete POST body: parse, tokenize, wait for a slot, answer. */
static enum MHD_Result complete(struct MHD_Connection *con, struct conn *c)
{
	struct stream *s = calloc(1, sizeof *s);
	if (!s)
		return MHD_NO;
	char param[API_PARAM_MAX];
	struct err e;
	struct idvec ids = { 0 };
	enum MHD_Result rc;
	if (api_parse(&s->req, c->kind, c->body.p ? c->body.p : "", c->body.n, &S.lim, param,
		      &e) < 0) {
		rc = send_error(con, MHD_HTTP_BAD_REQUEST, e.msg, param);
		goto out;
	}
	if (!s->req.has_seed) {
		uint64_t seed;
		if (rng_system_seed(&seed, &e) < 0) {
			rc = send_error(con, MHD_HTTP_INTERNAL_SERVER_ERROR, e.msg, NULL);
			goto out;
		}
		s->req.sp.seed = seed >> 1;  /* as sample does */
	}
	pthread_mutex_lock(&S.tok_mu);
	int tr = api_prompt_ids(&s->req, S.tok, &ids, &e);
	pthread_mutex_unlock(&S.tok_mu);
	if (tr < 0) {
		rc = send_error(con, MHD_HTTP_BAD_REQUEST, e.msg,
				c->kind == API_CHAT ? "messages" : "prompt");
		goto out;
	}
	if ((int64_t)ids.n >= (int64_t)S.slots.v[0].ctx) {
		char msg[160];
		snprintf(msg, sizeof msg, "the prompt is %zu tokens; the context holds %u (serve "
			 "--ctx), with room for at least one more", ids.n, S.slots.v[0].ctx);
		rc = send_error_code(con, MHD_HTTP_BAD_REQUEST, msg,
				     c->kind == API_CHAT ? "messages" : "prompt",
				     "context_length_exceeded");
		goto out;
	}
	int ar = slots_acquire(&S.slots, ids.v, (int)ids.n, client_gone, con, &s->sl);
	if (ar == SLOTS_GONE) {  /* nobody to answer: close */
		if (S.verbose)
			fprintf(stderr, "serve: a client left while its request waited\n");
		rc = MHD_NO;
		goto out;
	}
	if (ar == SLOTS_FULL) {
		rc = send_error(con, MHD_HTTP_SERVICE_UNAVAILABLE,
				"every slot is busy and the queue is full: try again", NULL);
		goto out;
	}
	if (api_gen_begin(&s->gen, &s->req, s->sl, S.tok, S.alias, ids.v, (int)ids.n, &e) < 0) {
		slots_release(&S.slots, s->sl);
		rc = e.kind == ERR_INVALID ?
			send_error(con, MHD_HTTP_BAD_REQUEST, e.msg,
				   c->kind == API_CHAT ? "messages" : "prompt") :
			send_error(con, MHD_HTTP_INTERNAL_SERVER_ERROR, e.msg, NULL);
		goto out;
	}
	if (S.verbose)
		fprintf(stderr, "serve: %s: %zu prompt tokens, %d kept in slot %ld\n", s->gen.id,
			ids.n, s->gen.cached, (long)(s->sl - S.slots.v));
	if (s->req.stream) {
		struct MHD_Response *r = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
		if (!r) {
			stream_free(s);
			idvec_free(&ids);
			return MHD_NO;
		}
		MHD_add_response_header(r, "Content-Type", "text/event-stream");
		MHD_add_response_header(r, "Cache-Control", "no-cache");
		allow_origin(r);
		rc = MHD_queue_response(con, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		idvec_free(&ids);
		return rc;
	}
	struct sbuf out = { 0 };
	int gr = api_gen_run(&s->gen, &out, client_gone, con, &e);
	api_gen_free(&s->gen);
	slots_release(&S.slots, s->sl);
	if (gr == 1) {
		if (S.verbose)
			fprintf(stderr, "serve: %s: the client left; stopped after %ld tokens\n",
				s->gen.id, s->gen.n_out);
		free(out.p);
		rc = MHD_NO;
	} else if (gr < 0) {
		free(out.p);
		rc = send_error(con, MHD_HTTP_INTERNAL_SERVER_ERROR, e.msg, NULL);
	} else {
		rc = send_text(con, MHD_HTTP_OK, "application/json", out.p);
	}
out:
	idvec_free(&ids);
	api_req_free(&s->req);
	free(s);
	return rc;
}

/* 405, with the methods the path takes (RFC 9110's Allow). */
static enum MHD_Result send_405(struct MHD_Connection *con, const char *allow, const char *msg)
{
	char *b = api_error_json(msg, "invalid_request_error", NULL, NULL);
	if (!b)
		return MHD_NO;
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(b), b,
								 MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(b);
		return MHD_NO;
	}
	if (S.verbose)
		fprintf(stderr, "serve: 405: %s\n", msg);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Allow", allow);
	allow_origin(r);
	enum MHD_Result rc = MHD_queue_response(con, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	MHD_destroy_response(r);
	return rc;
}

#define ALLOW_GET "GET, HEAD, OPTIONS"
#define ALLOW_POST "POST, OPTIONS"

/* The API's paths, also without their /v1 as llama-server takes them
 * (/models, /chat/completions, ...): url itself, or "/v1" + url in buf. */
static const char *api_path(const char *url, char *buf, size_t cap)
{
	static const char *const bare[] = { "/models", "/chat/completions", "/completions",
					    "/health" };
	if (!strncmp(url, "/v1/", 4) || !strcmp(url, "/health"))
		return url;
	for (size_t i = 0; i < sizeof bare / sizeof *bare; i++)
		if (!strcmp(url, bare[i]) || (i == 0 && !strncmp(url, "/models/", 8))) {
			snprintf(buf, cap, "/v1%s", url);
			return buf;
		}
	return url;
}

/* A request's answer from its method and URL alone, or, for the
 * completions, c->route set to read the body. HEAD is GET without the
 * body (libmicrohttpd leaves it out). */
static enum MHD_Result route(struct MHD_Connection *con, struct conn *c, const char *url,
			     const char *method)
{
	int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"),
	    post = !strcmp(method, "POST");
	char buf[1024];
	if (!strcmp(method, "OPTIONS"))
		return send_preflight(con);
	if (strlen(url) < sizeof buf - 4)
		url = api_path(url, buf, sizeof buf);
	if (!strcmp(url, "/health") || !strcmp(url, "/v1/health"))
		return get ? send_health(con) : send_405(con, ALLOW_GET, "/health: use GET");
	if (!strncmp(url, "/v1/", 4) && !authorized(con))
		return send_error(con, MHD_HTTP_UNAUTHORIZED,
				  "a valid API key is needed (Authorization: Bearer KEY)",
				  NULL);
	if (!strcmp(url, "/v1/models"))
		return get ? send_text(con, MHD_HTTP_OK, "application/json",
				       api_models_json(S.alias, S.created)) :
			     send_405(con, ALLOW_GET, "/v1/models: use GET");
	if (!strncmp(url, "/v1/models/", 11)) {
		if (!get)
			return send_405(con, ALLOW_GET, "/v1/models: use GET");
		if (strcmp(url + 11, S.alias)) {
			char msg[512];
			snprintf(msg, sizeof msg, "no model '%.200s' here (this server's is '%.200s')",
				 url + 11, S.alias);
			return send_error(con, MHD_HTTP_NOT_FOUND, msg, "model");
		}
		return send_text(con, MHD_HTTP_OK, "application/json",
				 api_model_json(S.alias, S.created));
	}
	if (!strcmp(url, "/v1/chat/completions") || !strcmp(url, "/v1/completions")) {
		c->kind = url[4] == 'c' && url[5] == 'h' ? API_CHAT : API_COMPLETION;
		if (!post)
			return send_405(con, ALLOW_POST, "use POST");
		const char *len = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
							      "Content-Length");
		if (len && strtoull(len, NULL, 10) > (unsigned long long)S.max_body)
			return send_error(con, MHD_HTTP_CONTENT_TOO_LARGE,
					  "the request body is larger than serve --max-body",
					  NULL);
		c->route = 1;
		return MHD_YES;
	}
	return send_error(con, MHD_HTTP_NOT_FOUND, "no such endpoint", NULL);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *con, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *size, void **con_cls)
{
	(void)cls, (void)version;
	struct conn *c = *con_cls;
	if (!c) {  /* the headers */
		if (!(c = calloc(1, sizeof *c)))
			return MHD_NO;
		*con_cls = c;
		/* A POST is routed now (a refusal need not wait for its body);
		 * anything else once its (empty) body is read, so that the
		 * answer keeps the connection open for the next request. */
		if (!strcmp(method, "POST"))
			return route(con, c, url, method);
		c->later = 1;
		return MHD_YES;
	}
	if (c->later) {
		if (*size) {  /* a body where none belongs: dropped */
			*size = 0;
			return MHD_YES;
		}
		c->later = 0;
		return route(con, c, url, method);
	}
	if (!c->route)
		return MHD_YES;  /* the answer is queued; the body is dropped */
	if (*size) {
		if (c->body.n + *size > (size_t)S.max_body)
			c->too_big = 1;
		else
			sbuf_put(&c->body, data, *size);
		*size = 0;
		if (c->too_big)  /* no more of an endless body: answer and close */
			return send_error(con, MHD_HTTP_CONTENT_TOO_LARGE,
					  "the request body is larger than serve --max-body", NULL);
		return c->body.oom ? MHD_NO : MHD_YES;
	}
	c->route = 0;
	return complete(con, c);
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)con, (void)toe;
	struct conn *c = *con_cls;
	if (c)
		free(c->body.p);
	free(c);
	*con_cls = NULL;
}

/* The address to listen on: --host (numeric) and --port. */
static struct sockaddr_storage bind_addr(int *v6, socklen_t *len)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	snprintf(port, sizeof port, "%ld", S.port);
	int r = getaddrinfo(S.host, port, &hints, &ai);
	if (r != 0)
		cli_die_usage("--host: '%s' is not an IPv4 or IPv6 address", S.host);
	struct sockaddr_storage a = { 0 };
	memcpy(&a, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	*v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);
	return a;
}

/* The listening socket, bound before the slots start: a port in use is
 * said at once, not after every slot has loaded the model. */
static int listen_on(const struct sockaddr_storage *a, socklen_t len, int v6)
{
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0 ||
	    (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) < 0) ||
	    bind(fd, (const struct sockaddr *)a, len) < 0 || listen(fd, 128) < 0)
		cli_die("cannot listen on %s port %ld: %s", S.host, S.port, strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	cli_init(&spec);
	parse_args(argc, argv);
	if (!S.alias) {
		size_t n = strlen(S.model);
		while (n > 1 && S.model[n - 1] == '/')
			n--;
		char *a = strndup(S.model, n), *slash = strrchr(a, '/');
		S.alias = slash && slash[1] ? slash + 1 : a;
	}
	int v6;
	socklen_t addr_len;
	struct sockaddr_storage addr = bind_addr(&v6, &addr_len);
	load_tokenizer();
	int lfd = listen_on(&addr, addr_len, v6);
	S.created = (long)time(NULL);

	/* The signals that end the server are taken by sigwait below; every
	 * thread inherits the mask. A client gone mid-write is EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	struct err e;
	if (slots_init(&S.slots, (int)S.parallel, (int)S.queue, fwd_argv, &e) < 0)
		cli_die_err(&e);
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
		(v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, handle, NULL,
		MHD_OPTION_LISTEN_SOCKET, lfd,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)S.timeout,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)(S.parallel + S.queue + 64),
		MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
		MHD_OPTION_END);
	if (!d) {
		slots_free(&S.slots);
		cli_die("cannot start the HTTP server on %s port %ld: %s", S.host, S.port,
			strerror(errno));
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr, "serve: %s on http://%s%s%s:%u/v1 (%ld slot%s of %u positions)\n",
		S.alias, v6 ? "[" : "", S.host, v6 ? "]" : "", info ? info->port : 0,
		S.parallel, S.parallel == 1 ? "" : "s", S.slots.v[0].ctx);
	/* At the signal: no more connections, the forwards ended, and out. A
	 * request waiting for a slot or in the middle of an answer is cut
	 * off (its connection closes with the process). */
	int sig;
	sigwait(&stop, &sig);
	MHD_quiesce_daemon(d);
	slots_end(&S.slots);
	fflush(stdout);
	_exit(128 + sig);
}
