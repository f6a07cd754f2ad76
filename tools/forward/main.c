/* forward: token ids in, logits out.
 *
 *   forward MODEL < ids > logits            generation (stdout a pipe) or
 *                                           scoring (stdout a file)
 *   forward MODEL --score [--all] < ids     the logits of the input, then exit
 *   forward --dump [--top K] < logits       a logits stream as text
 *
 * Ids are decimal text, one or more per line. The logits stream (binary,
 * lib/format/stream.h) never goes to a terminal. In generation mode forward
 * writes the prompt's last logits, then waits on the feedback FIFO named in
 * the stream header for each id the sampler draws, and answers each with
 * one more frame; the generation ends when the sampler closes the FIFO or
 * the context is full, and forward writes the stream's end record.
 *
 * Then it reads the next prompt, which extends the same sequence: only its
 * ids are computed (a conversation, docs/chat.md). A blank line or the end
 * of input ends a prompt; each prompt is a stream of its own (header,
 * frames, end record), for a new sampler. Two lines are commands:
 *
 *   @N   (before a prompt's ids) keep only the first N positions of the
 *        context: @0 starts over, @K rewinds to what a client knows
 *   ?    (between prompts) write an end record alone, now: the positions
 *        the context holds and its size
 *
 * forward ends at the end of its input, or when the reader of stdout has
 * gone. The FIFO and its directory are removed on every exit path.
 * Scoring reads the whole input as one sequence (blank lines are only
 * whitespace there).
 *
 * Exit status: 0 fine; 1 bad input, I/O error, no sampler connected;
 * 2 usage; 141 the reader of stdout went away while forward had more to
 * write.
 */
#include "attntrace.h"
#include "format/modelpath.h"
#include "cli/cli.h"
#include "core/slurp.h"
#include "core/timing.h"
#include "format/idtext.h"
#include "core/cpu.h"
#include "format/feedback.h"
#include "model/draft.h"
#include "model/forward.h"
#include "model/model.h"
#include "format/stream.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { OPT_SCORE = CLI_LONG, OPT_TRACE_ATTN, OPT_NO_CACHE, OPT_F32, OPT_MMAP,
       OPT_ACT8, OPT_F32ACT, OPT_B16ACT, OPT_TOP, OPT_DRAFT, OPT_DRAFT_NGRAM };

static const struct cli_opt opts[] = {
	{ 0, "MODEL", NULL, "a model directory, a .safetensors file with its\n"
	  "config.json beside it, a quantized container\n"
	  "(.q8, .q4, from quantize; self-contained) or a\n"
	  "GGUF file (.gguf: llama.cpp's; self-contained)" },
	{ 0, "IDS", NULL, "a file of token ids; - or none: stdin" },
	{ OPT_SCORE, "score", NULL, "compute the logits of the input and exit (the\n"
	  "default when stdout is a regular file); otherwise,\n"
	  "when stdout is a pipe, generate: wait for each\n"
	  "sampled id on the feedback FIFO named in the header" },
	{ 'a', "all", NULL, "with --score: a frame for every input position,\n"
	  "not only the last" },
	{ 'T', "trace", "FILE", "write the residual stream of the last position of\n"
	  "each call as JSON lines (embedding, every block,\n"
	  "final norm)" },
	{ OPT_TRACE_ATTN, "trace-attn", "FILE", "write the attention weights of every layer and\n"
	  "head for the new positions of each call as JSON\n"
	  "lines (layout: tools/forward/attntrace.h)" },
	{ OPT_NO_CACHE, "no-cache", NULL, "generation: run the whole sequence again at every\n"
	  "step instead of extending the KV cache (the\n"
	  "quadratic baseline; the same logits)" },
	{ OPT_DRAFT, "draft", "K", "generation: guess up to K next tokens from the\n"
	  "context (prompt lookup) and run them with each\n"
	  "token in one batch; the sampler verifies them, so\n"
	  "the tokens are the same as without (0 = off;\n"
	  "default 4 where the products run on int8 or bf16\n"
	  "activations, 0 on float32 ones, where a batch\n"
	  "costs about what its tokens would)" },
	{ OPT_DRAFT_NGRAM, "draft-ngram", "N", "with --draft: the longest n-gram looked up in\n"
	  "the context, tried from N down to 1 (default 3)" },
	{ 't', "threads", "N", "worker threads (default: the physical cores)" },
	{ 'c', "ctx|ctx-size", "N", "positions in the KV cache (default: the model's,\n"
	  "at most 4096)" },
	{ OPT_F32, "f32", NULL, "widen the weights to float32 (default: bf16 read\n"
	  "as bf16)" },
	{ OPT_MMAP, "mmap", NULL, "use the weights through the file mapping instead of\n"
	  "reading them into memory (faster start)" },
	{ OPT_ACT8, "int8-activations", NULL, "quantize the input of every int8 / int4 matrix\n"
	  "to int8 too (blocks of 32, one scale each) and\n"
	  "multiply integers (AVX-512 VNNI, AVX2 or scalar\n"
	  "kernels, the same results): the default for int8\n"
	  "and int4 weights (a float model: usage error)" },
	{ OPT_F32ACT, "f32-activations", NULL, "the exact mode of int8 / int4 weights: multiply\n"
	  "their codes by float32 inputs (slower; ppl --level\n"
	  "int4+f32 measures it)" },
	{ OPT_B16ACT, "bf16-activations", NULL, "round the input of every bf16 matrix to bf16 and\n"
	  "multiply bf16 pairs (AVX512_BF16 where the CPU has\n"
	  "it, else a scalar kernel with the same results):\n"
	  "faster prompts, less exact (ppl --level bf16+b16\n"
	  "measures it); for bf16 weights (else usage error)" },
	{ 'v', "verbose", NULL, "load time, memory, per-call timings and, at the\n"
	  "end, the positions computed on stderr" },
	{ 'd', "dump", NULL, "read a logits stream on stdin, print it as text" },
	{ OPT_TOP, "top", "K", "with --dump: the K largest logits (default 5)" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "forward",
	.usage = "forward MODEL [IDS|-] [--score [--all]] [--trace FILE] [--trace-attn FILE] "
		 "[--no-cache] [--draft K] [--draft-ngram N] [--threads N] [--ctx N] [--f32] [--mmap] "
		 "[--int8-activations | --f32-activations] [--bf16-activations] [-v]\n"
		 "forward --dump [--top K] < logits",
	.about = "Runs the Qwen2 forward pass: token ids (decimal text, one or more per\n"
		 "line) from IDS or stdin, the binary logits stream on stdout.\n",
	.opts = opts,
	.notes = "QWENPIPE_SIMD=scalar|avx2|avx512 caps the kernels used.\n",
};

/* Defaults. */
static int verbose;             /* -v */
static const char *in_name = "<stdin>";
#define FIRST_ID_TIMEOUT_MS 10000  /* a sampler must send its first id by then */
#define DRAFT_K 4       /* --draft: docs/performance.md, speculative decoding */
#define DRAFT_NGRAM 3
#define PAUSE_MAX 16    /* ids run without drafting after failures, at most */
static int draft_k = -1;        /* --draft; -1: DRAFT_K */
static int draft_ngram = DRAFT_NGRAM;  /* --draft-ngram */

/* ---- input: prompts (the grammar is in the comment at the top) ---- */

struct input {
	char *line;
	size_t cap;
	long lineno;
	int whole;   /* scoring: one sequence, no commands */
};

enum { PROMPT_EOF, PROMPT_IDS, PROMPT_QUERY };

struct prompt {
	struct idtext t;  /* its ids */
	int keep;         /* @N: positions to keep before the ids; -1 none */
	long keep_line;
};

/* A command line (@N or ?); s is the line without leading whitespace. */
static int command(struct input *in, struct prompt *p, char *s)
{
	size_t len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		s[--len] = 0;
	if (in->whole)
		cli_die("%s: line %ld: '%s': commands are for generation, not scoring",
			in_name, in->lineno, s);
	if (!strcmp(s, "?")) {
		if (p->t.n || p->keep >= 0)
			cli_die("%s: line %ld: '?' inside a prompt (end the prompt with a "
				"blank line first)", in_name, in->lineno);
		return PROMPT_QUERY;
	}
	char *end;
	errno = 0;
	long v = s[0] == '@' && isdigit((unsigned char)s[1]) ? strtol(s + 1, &end, 10) : -1;
	if (v < 0 || *end || errno || v > INT_MAX)
		cli_die("%s: line %ld: '%s' is not a command (@N or ?)", in_name,
			in->lineno, s);
	if (p->t.n)
		cli_die("%s: line %ld: %s must come before the prompt's ids", in_name,
			in->lineno, s);
	p->keep = (int)v;
	p->keep_line = in->lineno;
	return PROMPT_IDS;
}

/* Reads the next prompt into p. Returns PROMPT_IDS (ids and/or an @N),
 * PROMPT_QUERY (a ? line), or PROMPT_EOF (the input ended before any).
 * Errors name the line and the id (lib/format/idtext.h). */
static int read_prompt(struct input *in, struct prompt *p, int n_vocab)
{
	p->t.n = 0;
	p->keep = -1;
	struct err e;
	ssize_t got;
	while ((got = getline(&in->line, &in->cap, stdin)) >= 0) {
		in->lineno++;
		char *s = in->line;
		while (isspace((unsigned char)*s))
			s++;
		if (s == in->line + got) {  /* a blank line (a NUL is not one) */
			if (!in->whole && (p->t.n || p->keep >= 0))
				return PROMPT_IDS;
			continue;
		}
		if (*s == '@' || *s == '?') {
			if (command(in, p, s) == PROMPT_QUERY)
				return PROMPT_QUERY;
			continue;
		}
		if (idtext_append(s, (size_t)(in->line + got - s), in_name, in->lineno, n_vocab,
				  &p->t, &e) < 0)
			cli_die_err(&e);
	}
	if (ferror(stdin))
		cli_die("%s: read error: %s", in_name, strerror(errno));
	return p->t.n || p->keep >= 0 ? PROMPT_IDS : PROMPT_EOF;
}

/* ---- trace files: written whole (lib/core/outfile.h) ---- */

/* ---- --trace: the residual stream ---- */

struct trace {
	struct outfile out;
	int n_layers, call;
};

static void on_trace(void *arg, int pos, int index, const float *h, int n)
{
	struct trace *t = arg;
	FILE *fp = t->out.fp;
	const char *what = index == 0 ? "embedding" :
			   index <= t->n_layers ? "block" : "final_norm";
	fprintf(fp, "{\"call\":%d,\"pos\":%d,\"index\":%d,\"what\":\"%s\"", t->call,
		pos, index, what);
	if (index >= 1 && index <= t->n_layers)
		fprintf(fp, ",\"layer\":%d", index - 1);
	fputs(",\"h\":[", fp);
	for (int i = 0; i < n; i++)
		fprintf(fp, "%s%.9g", i ? "," : "", h[i]);
	fputs("]}\n", fp);
	if (index == t->n_layers + 1)
		t->call++;
}

/* ---- --trace-attn: attention weights (tools/forward/attntrace.h) ---- */

static struct outfile attn_out;
static struct attn_trace attn;

/* ---- writing the stream ---- */

struct out {
	const int *fed;   /* ids fed since the last frame */
	int n_fed;
	int spec;         /* a batch of one id and drafts: each frame's draft is
			   * the next frame's id */
	int left;         /* frames still to come in this call */
	int vocab;
	long frames;
};

static int emit(void *arg, int pos, const float *logits, struct err *e)
{
	struct out *o = arg;
	/* NaN or Inf in the weights shows here; say so once, and go on (the
	 * stream carries the values as they are) */
	static int warned;
	for (int i = 0; i < o->vocab && !warned; i++)
		if (!isfinite(logits[i])) {
			cli_warn("position %d: logit %d is %g (NaN or Inf in the weights? "
			     "st-inspect --check finds them)", pos, i, logits[i]);
			warned = 1;
		}
	o->left--;
	int32_t draft = o->spec && o->left > 0 ? o->fed[1] : -1;
	if (stream_write_frame(stdout, pos, o->fed, (uint32_t)o->n_fed, draft, logits,
			       (uint32_t)o->vocab, e) < 0)
		return -1;
	o->frames++;
	o->fed += o->n_fed;  /* with --all each frame has its one id */
	return 0;
}

/* Dies quietly (141) when the reader went away, loudly otherwise. */
static void write_header(const struct model *m, const struct forward *f,
			 uint32_t flags, const char *fifo)
{
	struct stream_header h = {
		.version = STREAM_VERSION,
		.n_vocab = (uint32_t)m->cfg.vocab_size,
		.n_eos = (uint32_t)m->gen.n_eos,
		.temperature = (float)m->gen.temperature,
		.top_k = m->gen.top_k,
		.top_p = (float)m->gen.top_p,
		.min_p = (float)m->gen.min_p,
		.repetition_penalty = (float)m->gen.repetition_penalty,
		.flags = flags,
		.ctx = (uint32_t)f->ctx,
	};
	memcpy(h.eos_ids, m->gen.eos_ids, sizeof h.eos_ids);
	snprintf(h.fifo_path, sizeof h.fifo_path, "%s", fifo);
	struct err e;
	if (stream_write_header(stdout, &h, &e) < 0)
		cli_die_err(&e);
}

/* Runs ids and writes their frames, whose fed ids are the last n_new of
 * them (with all, each frame's own; with spec, a batch: ids[0] and its
 * drafts, a frame each); -v reports the timing. */
static void eval(struct forward *f, const int *ids, int n, int n_new, int all,
		 int batch)
{
	all |= batch;
	struct out o = { .fed = all ? ids : ids + n - n_new, .n_fed = all ? 1 : n_new,
			 .spec = batch, .left = all ? n : 1,
			 .vocab = f->m->cfg.vocab_size };
	struct err e;
	if (attn_out.fp && attn_trace_begin(&attn, f->n_past, n, &e) < 0)
		cli_die("%s: %s", attn_out.path, e.msg);
	double t0 = time_now();
	if (forward_eval(f, ids, n, all, emit, &o, &e) < 0 ||
	    (fflush(stdout) != 0 && err_write(&e, errno, "write error") < 0))
		cli_die_err(&e);  /* a reader that went away ends forward quietly */
	double dt = time_now() - t0;
	if (attn_out.fp && attn_trace_write(&attn, &e) < 0)
		cli_die("%s: %s", attn_out.path, e.msg);
	if (verbose)
		fprintf(stderr, "forward: %d token%s at position %d in %.1f ms (%.1f tok/s)\n",
			n, n == 1 ? "" : "s", f->n_past - n, dt * 1e3, n / dt);
}

/* ---- generation ---- */

static struct feedback fb;

static void fb_cleanup(void)
{
	feedback_close(&fb);
}

/* Writes the end record; returns 0 when the reader of stdout has gone. */
static int write_end(const struct forward *f, long computed)
{
	struct stream_end end = { (uint32_t)f->n_past, (uint32_t)computed,
				  (uint32_t)f->ctx };
	struct err e;
	if (fflush(stdout) != 0) {
		err_write(&e, errno, "write error");
		cli_die_err(&e);
	}
	if (stream_write_end(STDOUT_FILENO, &end, &e) == 0)
		return 1;
	if (e.kind != ERR_WRITE || e.errnum != EPIPE)
		cli_die_err(&e);
	return 0;
}

/* Drafting (--draft): the accepted sequence and its index, the batch in
 * flight, and the counts -v reports. */
struct drafting {
	struct draft d;   /* the accepted ids: the context, for --no-cache too */
	int32_t *batch;   /* [1 + draft_k]: the id fed back, then the drafts */
	int n_drafts;     /* drafts in the batch in flight */
	int accepted;     /* of them, accepted so far */
	int k;            /* drafts for the next batch, 1..draft_k (below) */
	int pause, wait;  /* after failed single drafts: ids to run without
			   * drafting (1, 2, 4 .. PAUSE_MAX), and how many are left */
	long drafted, taken;  /* over the run */
};

/* Takes id from the sampler: an accepted draft (returns 1), or the next
 * token, which ends the batch in flight (returns 0: the KV cache then
 * holds the accepted positions only). */
static int take(struct forward *f, struct drafting *sp, int id)
{
	if (sp->accepted < sp->n_drafts && id == sp->batch[1 + sp->accepted]) {
		sp->accepted++;
		sp->taken++;
		draft_push(&sp->d, id);
		return 1;
	}
	/* The next batch drafts as many as this one accepted and one more,
	 * twice as many after a batch accepted whole: few wasted positions
	 * where guesses fail, long batches where they hold. A single draft
	 * that fails pauses drafting, twice as long each time in a row. */
	if (sp->n_drafts) {
		sp->k = sp->accepted < sp->n_drafts ? sp->accepted + 1 :
			2 * sp->k < draft_k ? 2 * sp->k : draft_k;
		if (sp->accepted)
			sp->pause = 0;
		else if (sp->n_drafts == 1)
			sp->wait = sp->pause = sp->pause ? 2 * sp->pause < PAUSE_MAX ?
					       2 * sp->pause : PAUSE_MAX : 1;
	}
	forward_keep(f, sp->d.n);
	sp->n_drafts = sp->accepted = 0;
	return 0;
}

/* One generation: the prompt's ids, then one id at a time from the
 * sampler until it closes the FIFO (or the reader of stdout goes), then
 * the end record. Returns 0 when the reader of stdout has gone. Each id
 * runs with the drafts that follow it in the context (--draft), as one
 * batch. Without the cache (no_cache), every step empties it and runs the
 * whole sequence again: the quadratic baseline, same logits. */
static int generate(struct forward *f, const struct prompt *p, struct drafting *sp,
		    int no_cache, long number)
{
	struct err e;
	long before = f->positions, fed = 0, drafted = sp->drafted, taken = sp->taken;
	if (feedback_open(&fb, &e) < 0)
		cli_die("%s", e.msg);
	write_header(f->m, f, STREAM_FLAG_FEEDBACK, fb.path);
	for (long i = 0; i < p->t.n; i++)
		draft_push(&sp->d, p->t.ids[i]);
	/* the work of a prompt depends on the context alone */
	sp->k = draft_k;
	sp->pause = sp->wait = 0;
	if (no_cache) {
		forward_reset(f);
		eval(f, sp->d.ids, sp->d.n, (int)p->t.n, 0, 0);
	} else {
		eval(f, p->t.ids, (int)p->t.n, (int)p->t.n, 0, 0);
	}
	for (;;) {
		int id;
		int r = feedback_next(&fb, STDOUT_FILENO, FIRST_ID_TIMEOUT_MS, &id, &e);
		if (r < 0)
			cli_die("%s", e.msg);
		if (r == 0)
			break;
		if (id >= f->m->cfg.vocab_size)
			cli_die("%s: id %d is outside the vocabulary (0..%d)", fb.path, id,
			    f->m->cfg.vocab_size - 1);
		fed++;
		if (take(f, sp, id))
			continue;
		if (f->n_past >= f->ctx) {
			cli_warn("context full (%d positions, --ctx); stopping", f->ctx);
			break;
		}
		draft_push(&sp->d, id);
		int room = f->ctx - f->n_past - 1;
		sp->batch[0] = id;
		sp->n_drafts = sp->wait ? 0 : draft_propose(&sp->d, sp->k < room ?
							  sp->k : room, sp->batch + 1);
		sp->wait -= sp->wait > 0;
		sp->drafted += sp->n_drafts;
		if (no_cache) {
			forward_reset(f);
			eval(f, sp->d.ids, sp->d.n, 1, 0, 0);
		} else {
			eval(f, sp->batch, 1 + sp->n_drafts, 1, 0, 1);
		}
	}
	feedback_close(&fb);
	forward_keep(f, sp->d.n);
	sp->n_drafts = sp->accepted = 0;
	long computed = f->positions - before;
	if (verbose) {
		fprintf(stderr, "forward: prompt %ld: %ld position%s (%ld prompt id%s, "
			"%ld fed back", number, computed, computed == 1 ? "" : "s",
			p->t.n, p->t.n == 1 ? "" : "s", fed);
		if (draft_k)
			fprintf(stderr, "; %ld drafted, %ld accepted",
				sp->drafted - drafted, sp->taken - taken);
		fprintf(stderr, "); the context holds %d of %d\n", f->n_past, f->ctx);
	}
	return write_end(f, computed);
}

/* Dies unless the prompt's ids fit in what is left of the context. */
static void check_fits(const struct forward *f, const struct prompt *p,
		       const struct input *in)
{
	if (p->t.n <= f->ctx - f->n_past)
		return;
	if (f->n_past == 0)
		cli_die("%s: %ld ids do not fit in the context of %d positions (--ctx)",
			in_name, p->t.n, f->ctx);
	cli_die("%s: line %ld: %ld more ids do not fit in the context of %d positions, "
		"%d of them in use (--ctx; @N keeps fewer)", in_name, in->lineno, p->t.n,
		f->ctx, f->n_past);
}

/* Generation mode: prompt after prompt, each extending the sequence. */
static void converse(struct forward *f, struct input *in, int no_cache)
{
	struct prompt p = { 0 };
	struct drafting sp = { 0 };
	struct err e;
	if (draft_init(&sp.d, draft_ngram, f->ctx, &e) < 0 ||
	    !(sp.batch = malloc(sizeof *sp.batch * (size_t)(1 + draft_k))))
		cli_die("out of memory");
	atexit(fb_cleanup);
	long number = 0;
	int any = 0, k;
	while ((k = read_prompt(in, &p, f->m->cfg.vocab_size)) != PROMPT_EOF) {
		any = 1;
		if (k == PROMPT_QUERY) {
			if (!write_end(f, 0))
				break;
			continue;
		}
		if (p.keep >= 0) {
			if (p.keep > f->n_past)
				cli_die("%s: line %ld: @%d: the context holds only %d position%s",
					in_name, p.keep_line, p.keep, f->n_past,
					f->n_past == 1 ? "" : "s");
			forward_keep(f, p.keep);
			draft_keep(&sp.d, p.keep);
		}
		if (p.t.n == 0)
			continue;
		check_fits(f, &p, in);
		if (!generate(f, &p, &sp, no_cache, ++number))
			break;
	}
	if (!any)
		cli_die("%s: no token ids", in_name);
	if (verbose && draft_k)
		fprintf(stderr, "forward: %ld drafted, %ld accepted\n", sp.drafted,
			sp.taken);
	free(p.t.ids);
	draft_free(&sp.d);
	free(sp.batch);
}

/* ---- --dump ---- */

static void dump(int top)
{
	struct stream_header h;
	struct stream_frame fr = { 0 };
	struct err e;
	if (stream_read_header(stdin, &h, in_name, &e) < 0)
		cli_die("%s", e.msg);
	printf("# vocab %u, eos", h.n_vocab);
	for (uint32_t i = 0; i < h.n_eos; i++)
		printf(" %d", h.eos_ids[i]);
	printf(", ctx %u, %s\n", h.ctx, h.flags & STREAM_FLAG_FEEDBACK ? "generation" :
	       "score");
	int *best = malloc(sizeof(int) * (size_t)top);
	if (!best)
		cli_die("out of memory");
	int r;
	while ((r = stream_read_frame(stdin, &h, &fr, in_name, &e)) == 1) {
		int k = 0;
		for (uint32_t i = 0; i < h.n_vocab; i++) {
			int j = k < top ? k++ : top;
			if (j == top && !(fr.logits[i] > fr.logits[best[top - 1]]))
				continue;
			if (j == top)
				j = top - 1;
			while (j > 0 && fr.logits[i] > fr.logits[best[j - 1]]) {
				best[j] = best[j - 1];
				j--;
			}
			best[j] = (int)i;
		}
		printf("pos=%d token=%d ", fr.pos, fr.n_fed ? fr.fed[fr.n_fed - 1] : -1);
		if (fr.draft >= 0)
			printf("draft=%d ", fr.draft);
		printf("argmax=%d top=", best[0]);
		for (int i = 0; i < k; i++)
			printf("%s%d:%.4f", i ? "," : "", best[i], fr.logits[best[i]]);
		putchar('\n');
	}
	if (r < 0)
		cli_die("%s", e.msg);
	free(best);
	stream_frame_free(&fr);
}

/* ---- main ---- */

static int stdout_is_file(void)
{
	struct stat sb;
	return fstat(STDOUT_FILENO, &sb) == 0 && S_ISREG(sb.st_mode);
}

int main(int argc, char **argv)
{
	cli_init(&spec);
	int score = 0, all = 0, do_dump = 0, top = 5, act8 = 0, f32act = 0;
	const char *trace_path = NULL, *attn_path = NULL;
	int no_cache = 0;
	struct forward_opts fo = { 0 };
	struct model_opts mo = { 0 };
	const char *v;
	int c;
	int run_flag = 0;  /* a flag of a model's run, for --dump's check */
	int top_given = 0;
	while ((c = cli_getopt(argc, argv, &v)) != -1) {
		switch (c) {
		case OPT_SCORE: score = 1; break;
		case 'a': all = 1; break;
		case 'T': trace_path = v; break;
		case OPT_TRACE_ATTN: attn_path = v; break;
		case OPT_NO_CACHE: no_cache = 1; break;
		case 't': fo.threads = (int)cli_flag_long("--threads", v, 1, 256); break;
		case 'c': fo.ctx = (int)cli_flag_long("--ctx", v, 1, 1 << 24); break;
		case OPT_F32: mo.f32 = 1; break;
		case OPT_MMAP: mo.mmap = 1; break;
		case OPT_ACT8: act8 = 1; break;
		case OPT_F32ACT: f32act = 1; break;
		case OPT_B16ACT: fo.b16act = 1; break;
		case 'v': verbose = 1; break;
		case 'd': do_dump = 1; break;
		case OPT_TOP: top = (int)cli_flag_long("--top", v, 1, 1000); top_given = 1; break;
		case OPT_DRAFT: draft_k = (int)cli_flag_long("--draft", v, 0, 64); break;
		case OPT_DRAFT_NGRAM:
			draft_ngram = (int)cli_flag_long("--draft-ngram", v, 1, DRAFT_NGRAM_MAX);
			break;
		}
		if (c != 'v' && c != 'd' && c != OPT_TOP && !run_flag)
			run_flag = c;
	}
	if (do_dump) {
		if (optind != argc)
			cli_die_usage("--dump takes no model");
		if (run_flag)
			cli_die_usage("--dump: --%s is for a model's run, not a stream's dump",
				      cli_flag_name(run_flag));
		dump(top);
		cli_exit(EXIT_OK);
	}
	if (top_given)
		cli_die_usage("--top: only with --dump");
	if (optind == argc)
		cli_die_usage("no model given");
	/* After the model, the ids' file: "-" (or nothing) is stdin. */
	if (argc - optind > 2)
		cli_die_usage("one model and one ids file only");
	if (argc - optind == 2 && strcmp(argv[optind + 1], "-") != 0) {
		in_name = argv[optind + 1];
		if (!freopen(in_name, "r", stdin))
			cli_die("%s: %s", in_name, strerror(errno));
	}
	cli_refuse_binary_tty();
	/* A reader that went away is seen as EPIPE: at an end record that is
	 * the normal end of a pipeline, elsewhere exit 141 (cli_die_err). */
	signal(SIGPIPE, SIG_IGN);
	if (stdout_is_file())
		score = 1;
	if (all && !score)
		cli_die_usage("--all needs --score (or stdout a file)");
	if (no_cache && draft_k > 0)
		cli_die_usage("--draft needs the cache (--no-cache runs one token at a time)");
	int bad_env;
	fo.level = cpu_level_env(&bad_env);
	if (bad_env)
		cli_warn("QWENPIPE_SIMD: unknown value '%s' ignored", getenv("QWENPIPE_SIMD"));

	const char *path = argv[optind];
	struct modelpath mp;
	struct err e;
	if (modelpath_resolve(&mp, path, &e) < 0)
		cli_die("%s", e.msg);
	const char *const inputs[] = { mp.weights, mp.config, mp.gen, mp.tokenizer, in_name };
	cli_refuse_input("--trace", trace_path, inputs, sizeof inputs / sizeof *inputs);
	cli_refuse_input("--trace-attn", attn_path, inputs, sizeof inputs / sizeof *inputs);
	if (trace_path && attn_path && cli_same_file(trace_path, attn_path))
		cli_die_usage("--trace and --trace-attn: both write %s", attn_path);
	struct model m;
	struct forward f;
	double t0 = time_now();
	if (model_load(&m, path, &mo, &e) < 0)
		cli_die("%s", e.msg);
	double t1 = time_now();
	if (act8 && f32act)
		cli_die_usage("--int8-activations and --f32-activations: pick one");
	if (act8 && !forward_has_int_weights(&m))
		cli_die_usage("--int8-activations: %s has no int8 or int4 weights (quantize it "
			  "first)", path);
	if ((fo.act8 = forward_act8_prepare(&m, f32act, &e)) < 0)
		cli_die("%s: %s", path, e.msg);
	if (draft_k < 0)  /* docs/performance.md, speculative decoding */
		draft_k = no_cache || !(fo.act8 || fo.b16act) ? 0 : DRAFT_K;
	if (fo.b16act && !forward_has_bf16_weights(&m))
		cli_die_usage("--bf16-activations: %s has no bf16 weights (%s)", path,
			  mo.f32 ? "--f32 widened them" : "it stores none");
	if (fo.b16act && model_tile_b16(&m, &e) < 0)
		cli_die("%s: %s", path, e.msg);
	struct trace tr = { .n_layers = m.cfg.n_layers };
	if (trace_path) {
		cli_outfile_open(&tr.out, trace_path);
		fo.trace = on_trace;
		fo.trace_arg = &tr;
	}
	if (attn_path) {
		cli_outfile_open(&attn_out, attn_path);
		attn_trace_init(&attn, attn_out.fp, m.cfg.n_layers, m.cfg.n_heads);
		fo.attn_trace = attn_trace_record;
		fo.attn_arg = &attn;
	}
	if (forward_init(&f, &m, &fo, &e) < 0)
		cli_die("%s: %s", path, e.msg);
	if (verbose)
		fprintf(stderr, "forward: %s: loaded in %.1f ms; weights %.1f MiB (%s%s), "
			"run state %.1f MiB (ctx %d, batch %d); %s kernels%s%s%s%s, %d thread%s\n",
			path, (t1 - t0) * 1e3, m.weight_bytes / 1048576.0,
			mo.f32 ? "f32" : "as stored", m.copied ? ", copied" : ", mapped",
			f.state_bytes / 1048576.0, f.ctx, f.batch, cpu_level_name(f.k->level),
			fo.act8 ? ", int8 activations (" : "",
			fo.act8 ? forward_act8_kernel(f.k->level) : "", fo.act8 ? ")" : "",
			!fo.b16act ? "" : f.k->level == CPU_AVX512 && kern_has_dpbf16()
				? ", bf16 activations (vdpbf16ps)" : ", bf16 activations (scalar)",
			f.threads, f.threads == 1 ? "" : "s");
	if (verbose && m.note[0])
		fprintf(stderr, "forward: %s: %s\n", path, m.note);
	if (verbose && m.gen.origin)
		fprintf(stderr, "forward: %s: sampling defaults: %s\n", path, m.gen.origin);

	struct input in = { .whole = score };
	if (score) {
		struct prompt p = { 0 };
		if (read_prompt(&in, &p, m.cfg.vocab_size) == PROMPT_EOF)
			cli_die("%s: no token ids", in_name);
		check_fits(&f, &p, &in);
		write_header(&m, &f, all ? STREAM_FLAG_ALL : 0, "");
		eval(&f, p.t.ids, (int)p.t.n, (int)p.t.n, all, 0);
		if (!write_end(&f, f.positions))
			cli_exit(EXIT_PIPE);
		free(p.t.ids);
	} else {
		converse(&f, &in, no_cache);
	}
	free(in.line);
	if (trace_path)
		cli_outfile_commit(&tr.out);
	if (attn_path) {
		cli_outfile_commit(&attn_out);
		attn_trace_free(&attn);
	}
	if (verbose)
		fprintf(stderr, "forward: %ld positions computed\n", f.positions);
	forward_free(&f);
	model_free(&m);
	cli_exit(EXIT_OK);
}
