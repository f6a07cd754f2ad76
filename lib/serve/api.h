/* api: the OpenAI HTTP API's requests and responses, as llama-server
 * implements them, over a slot (lib/serve/slot.h): what `serve` does
 * between the HTTP library and the model.
 *
 * Requests (JSON bodies, strict RFC 8259 through lib/core/jsonutil.h):
 *
 *   POST /v1/chat/completions  messages (the model's chat template,
 *                              lib/text/chat.h), stream, stream_options.
 *                              include_usage, max_tokens (or
 *                              max_completion_tokens), temperature, top_p,
 *                              top_k, min_p, repeat_penalty, seed (-1:
 *                              none), stop (a string or an array),
 *                              logprobs, top_logprobs, and llama-server's
 *                              ignore_eos and n_predict
 *   POST /v1/completions       prompt (a string, or token ids: an array
 *                              of integers, as llama-server and OpenAI
 *                              take them) and the same fields, logprobs
 *                              an integer there
 *
 * Unknown fields are ignored. A field of the wrong type or out of range is
 * refused with its name; so are what is not supported rather than
 * silently ignored: tools and functions (a non-empty list, a tool_choice
 * other than "none"), n or best_of other than 1, frequency_penalty or
 * presence_penalty other than 0 (use repeat_penalty, transformers'
 * multiplicative one), response_format other than text, grammar,
 * json_schema, a non-empty logit_bias, mirostat, typical_p other than 1,
 * prediction, audio, echo, suffix.
 *
 * A generation's text is the tokens' bytes (lib/text/tokenizer.h) through
 * the stop strings (lib/text/stoptext.h); characters split across tokens
 * wait for the token that completes them. A streamed response is one
 * server-sent event per token, then one with the finish reason, then the
 * usage (when asked), then "data: [DONE]".
 */
#ifndef API_H
#define API_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/sbuf.h"
#include "core/utf8.h"
#include "serve/slot.h"
#include "text/chat.h"
#include "text/stoptext.h"
#include "text/tokenizer.h"

enum api_kind { API_CHAT, API_COMPLETION };

/* The server's limits and defaults. */
struct api_limits {
	long max_tokens;       /* the most a request may ask */
	long default_tokens;   /* when it does not say */
	long max_messages;
	long max_stops;
	struct slot_params defaults;  /* the server's sampling flags (NAN: the model's) */
};

#define API_PARAM_MAX 64

struct api_req {
	enum api_kind kind;
	int stream, include_usage;
	int ignore_eos;        /* llama-server's: go on past the end of sequence */
	long max_tokens;
	struct slot_params sp;
	int has_seed;
	char **stops;
	int n_stops;
	int logprobs;          /* log-probabilities wanted */
	int top_logprobs;      /* and this many alternatives */
	struct chat_msg *msgs; /* chat */
	size_t n_msgs;
	char *prompt;          /* completion: the text, or NULL and */
	struct idvec ids;      /* its token ids */
};

/* Parses a request body[0..n). Returns 0, or -1 with e set and param
 * (API_PARAM_MAX bytes) naming the field ("temperature", "messages",
 * "" for the body as a whole). Free with api_req_free either way. */
int api_parse(struct api_req *r, enum api_kind kind, const char *body, size_t n,
	      const struct api_limits *lim, char *param, struct err *e);
void api_req_free(struct api_req *r);

/* The prompt's ids: the chat template's rendering, or the prompt text,
 * encoded as `tok chat` and `tok encode` do, or the ids given (each a
 * token of t, or an error naming it). t is used by one thread at a
 * time (the caller locks). Returns 0 or -1. */
int api_prompt_ids(const struct api_req *r, struct tokenizer *t, struct idvec *out,
		   struct err *e);

/* An OpenAI error object: {"error": {"message", "type", "param", "code"}};
 * param NULL or "" is null, code NULL is null. Returns a string to free(),
 * or NULL. */
char *api_error_json(const char *msg, const char *type, const char *param, const char *code);

/* The model list of GET /v1/models, one model named name; and that model
 * alone, as GET /v1/models/NAME answers. */
char *api_models_json(const char *name, long created);
char *api_model_json(const char *name, long created);

/* A generation in progress. */
struct api_gen {
	const struct api_req *r;
	struct slot *sl;
	const struct tokenizer *t;
	const char *model;
	char id[48];
	long created;
	int n_prompt, cached;
	long n_out;
	const char *finish;   /* "stop", "length"; NULL while going */
	int state;            /* 0 first event to send, 1 tokens, 2 done */
	struct utf8_hold hold;
	struct stoptext st;
	struct sbuf text;     /* the whole text (not streamed) */
	long lp_offset;       /* completions: the text offset of the next token */
};

/* Begins: the slot computes the prompt ids[0..n). Returns 0, or -1 with e
 * set (e.kind ERR_INVALID: the request's fault, a 400). */
int api_gen_begin(struct api_gen *g, const struct api_req *r, struct slot *sl,
		  const struct tokenizer *t, const char *model, const int32_t *ids, int n,
		  struct err *e);

/* Streamed: appends the next events to out. Returns 1 while more will
 * come, 0 when out ends with "data: [DONE]", -1 with e set. */
int api_gen_stream(struct api_gen *g, struct sbuf *out, struct err *e);

/* Not streamed: runs the generation to its end and appends the response
 * object to out. Returns 0; 1, out untouched, when gone(arg), asked before
 * each token, says the client left (the generation stops there); or -1. */
int api_gen_run(struct api_gen *g, struct sbuf *out, int (*gone)(void *arg), void *arg,
		struct err *e);

/* Ends the generation (if it has not ended) and frees g's buffers. */
void api_gen_free(struct api_gen *g);

#endif
