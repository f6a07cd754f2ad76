/* sample: a logits stream in, token ids out, one per line.
 *
 *   tok encode < prompt | forward MODEL | sample [options] | tok decode
 *
 * Reads the binary logits stream (lib/format/stream.h) on stdin. For each frame it
 * draws the next token (lib/sample/sampler.h: transformers' repetition penalty,
 * temperature, top-k, top-p, min-p), writes it to stdout (flushed, so the
 * text streams) and, when the stream header names a feedback FIFO, to
 * forward through it, which answers with the next frame. The defaults are
 * the model's generation_config.json, carried in the stream header; every
 * flag overrides one.
 *
 * It stops at an end-of-sequence id (not written unless --emit-eos), after
 * -n tokens, when the frame it drew from was the last position forward's
 * context holds (the header's ctx), when stdout is closed (exit 141,
 * quietly), at SIGINT (at the next frame, which it reads but does not draw
 * from; exit 130), or at the end of the stream (its end record, or forward
 * stopped or was killed); it then closes the FIFO, which ends the
 * generation. Speculative frames (forward --draft) are verified as
 * lib/format/stream.h says: each is drawn from exactly as the frame of
 * one-at-a-time decoding would be (the same random draws), a token equal
 * to the frame's draft goes on to the next frame of the batch, and any
 * other skips the rest of the batch, so the ids are the same with drafting
 * on or off. Every id it feeds back is one it wrote; the id it stops on
 * is never fed back (the end of sequence, the -n-th, the one drawn at a
 * full context), so forward's context then holds the prompt and the ids
 * written before that one (docs/chat.md).
 *
 * Exit status: 0 stopped normally; 1 bad stream, I/O error; 2 usage;
 * 130 interrupted (SIGINT); 141 the reader of stdout went away.
 */
#include "cli/cli.h"
#include "core/timing.h"
#include "core/jsonutil.h"
#include "format/feedback.h"
#include "core/rng.h"
#include "sample/sampler.h"
#include "format/stream.h"

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

enum { OPT_GREEDY = CLI_LONG, OPT_TEMP, OPT_TOP_P, OPT_MIN_P, OPT_PENALTY,
       OPT_IGNORE_EOS, OPT_EMIT_EOS, OPT_LOGPROBS, OPT_LOGPROBS_FILE };

static const struct cli_opt opts[] = {
	{ OPT_GREEDY, "greedy", NULL, "the most probable token (lowest id on ties);\n"
	  "same as --temperature 0" },
	{ OPT_TEMP, "temperature|temp", "T", "divide the logits by T (0 = greedy)" },
	{ 'k', "top-k", "K", "keep the K most probable tokens and every token\n"
	  "tied with the K-th (0 = off)" },
	{ OPT_TOP_P, "top-p", "P", "keep the most probable tokens whose probability\n"
	  "adds up to P (1 = off)" },
	{ OPT_MIN_P, "min-p", "P", "drop tokens less probable than P times the most\n"
	  "probable one (0 = off)" },
	{ OPT_PENALTY, "repeat-penalty", "R", "divide the positive logits (multiply the\n"
	  "negative ones) of every token already in the\n"
	  "context, prompt included, by R (1 = off); also\n"
	  "applies to --greedy, as in transformers" },
	{ 's', "seed", "S", "seed of the random generator (xoshiro256**);\n"
	  "default: drawn from the system, shown with -v" },
	{ 'n', "tokens|max-tokens|n-predict|predict", "N", "stop after N new tokens (default: no limit)" },
	{ OPT_IGNORE_EOS, "ignore-eos", NULL, "do not stop at an end-of-sequence token" },
	{ OPT_EMIT_EOS, "emit-eos", NULL, "write the end-of-sequence token before stopping" },
	{ OPT_LOGPROBS, "logprobs", "K", "with --logprobs-file: for each token, its\n"
	  "log-probability under the model (softmax of the\n"
	  "raw logits) and the K most probable tokens';\n"
	  "how many the chain kept, and the K most\n"
	  "probable of those with their probabilities\n"
	  "after it (\"after\")" },
	{ OPT_LOGPROBS_FILE, "logprobs-file", "F", "where those JSON lines go (stdout stays ids)" },
	{ 'v', "verbose", NULL, "parameters, seed, stop reason, tokens, time to\n"
	  "first token and tokens/s on stderr" },
	{ 0 },
};

static const struct cli_spec spec = {
	.prog = "sample",
	.usage = "sample [--greedy] [--temperature T] [--top-k K] [--top-p P] [--min-p P] "
		 "[--repeat-penalty R] [--seed S] [-n N] [--ignore-eos] [--emit-eos] "
		 "[--logprobs K --logprobs-file FILE] [-v] < logits",
	.about = "Draws the next token for each frame of a logits stream (from forward) and\n"
		 "writes its id to stdout, one per line, and back to forward through the\n"
		 "feedback FIFO named in the stream header. Defaults come from the model's\n"
		 "generation_config.json, carried in the stream header.\n",
	.opts = opts,
	.notes = "The order is transformers': repetition penalty, temperature, top-k,\n"
		 "top-p, min-p, then one draw from what is left.\n",
};

/* Flags; NAN or -1 means "the stream header's value". */
static struct sampler_params opt = { .temperature = NAN, .top_k = -1, .top_p = NAN,
				     .min_p = NAN, .repetition_penalty = NAN };
static long opt_seed = -1;            /* --seed; -1: from the system */
static long max_tokens = -1;          /* -n; -1: no limit */
static int ignore_eos, emit_eos, verbose;
static long logprobs_k = -1;          /* --logprobs */
static const char *logprobs_path;     /* --logprobs-file */

static const char *in_name = "<stdin>";

static void parse_args(int argc, char **argv)
{
	const char *v;
	int c;
	while ((c = cli_getopt(argc, argv, &v)) != -1) {
		switch (c) {
		case OPT_GREEDY: opt.temperature = 0; break;
		case OPT_TEMP: opt.temperature = cli_flag_double("--temperature", v, 0, 100); break;
		case 'k': opt.top_k = (int)cli_flag_long("--top-k", v, 0, INT32_MAX); break;
		case OPT_TOP_P: opt.top_p = cli_flag_double("--top-p", v, 0, 1); break;
		case OPT_MIN_P: opt.min_p = cli_flag_double("--min-p", v, 0, 1); break;
		case OPT_PENALTY: opt.repetition_penalty = cli_flag_double("--repeat-penalty", v, 0.001, 1000); break;
		case 's': opt_seed = cli_flag_long("--seed", v, 0, LONG_MAX); break;
		case 'n': max_tokens = cli_flag_long("--tokens", v, 0, LONG_MAX); break;
		case OPT_IGNORE_EOS: ignore_eos = 1; break;
		case OPT_EMIT_EOS: emit_eos = 1; break;
		case OPT_LOGPROBS: logprobs_k = cli_flag_long("--logprobs", v, 0, 100); break;
		case OPT_LOGPROBS_FILE: logprobs_path = v; break;
		case 'v': verbose = 1; break;
		}
	}
	if (optind < argc)
		cli_die_usage("unexpected argument '%s'", argv[optind]);
	if ((logprobs_k >= 0) != (logprobs_path != NULL))
		cli_die_usage("--logprobs and --logprobs-file go together");
}

/* The sampling parameters: the header's, overridden by the flags. */
static struct sampler_params params(const struct stream_header *h)
{
	struct sampler_params p;
	struct err e;
	/* A flag wins over the header: only what is left of the header is
	 * checked. */
	if (sampler_params_f32(&p, h->temperature, h->top_k, h->top_p, h->min_p,
			       h->repetition_penalty, &opt, &e) < 0)
		cli_die("%s: logits stream header: %s", in_name, e.msg);
	return p;
}

/* ---- --logprobs-file: written whole (lib/core/outfile.h), so an
 * interrupted run leaves no partial file ---- */

static struct outfile lp_out;
static FILE *lp;  /* lp_out.fp while open */

static void lp_open(void)
{
	cli_outfile_open(&lp_out, logprobs_path);
	lp = lp_out.fp;
}

static void lp_close(void)
{
	if (!lp)
		return;
	lp = NULL;
	cli_outfile_commit(&lp_out);
}

static void lp_fail(void)
{
	lp = NULL;
	outfile_abort(&lp_out);
}

/* SIGINT stops the generation at the next frame, so that forward is left
 * between two frames (a conversation can go on); a second one gets the
 * handling there was before (lib/core/cleanup.h's, or the default): sample
 * ends at once. */
static volatile sig_atomic_t interrupted;
static struct sigaction prev_int;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
	sigaction(SIGINT, &prev_int, NULL);
}

/* After a stop at SIGINT: ends with the status of SIGINT (130). */
static _Noreturn void die_of_sigint(void)
{
	lp_fail();
	fflush(stdout);
	signal(SIGINT, SIG_DFL);
	raise(SIGINT);
	_exit(128 + SIGINT);
}

/* One JSON line: the chosen token and the K most probable, with their
 * log-probabilities under the model (before the chain); how many tokens the
 * chain kept and the K most probable of them, with their probabilities
 * after it (what the draw used). A log-probability that is not finite (a
 * token whose logit is -inf has probability 0) is written null: JSON has
 * no -inf or NaN. */
static void lp_write(struct sampler *s, const struct stream_frame *fr, int id,
		     int k, struct sampler_cand *top)
{
	double lse = sampler_logsumexp(s, fr->logits);
	fprintf(lp, "{\"pos\": %d, \"id\": %d, \"logprob\": ", fr->pos + 1, id);
	json_write_float(lp, fr->logits[id] - lse);
	fputs(", \"top\": [", lp);
	sampler_top(s, fr->logits, k, top);
	for (int i = 0; i < k; i++) {
		fprintf(lp, "%s{\"id\": %d, \"logprob\": ", i ? ", " : "", top[i].id);
		json_write_float(lp, top[i].x - lse);
		fputc('}', lp);
	}
	int n_after = sampler_kept_top(s, k, top), n_kept;
	sampler_kept(s, &n_kept);
	fprintf(lp, "], \"kept\": %d, \"after\": [", n_kept);
	for (int i = 0; i < n_after; i++) {
		fprintf(lp, "%s{\"id\": %d, \"p\": ", i ? ", " : "", top[i].id);
		json_write_float(lp, top[i].p);
		fputc('}', lp);
	}
	fputs("]}\n", lp);
}

/* ---- the loop ---- */

/* After drawing id from fr: stream_took (INT32_MAX, never a draft, reads
 * the rest of the batch unused). Dies on a bad stream. */
static void took(const struct stream_header *h, struct stream_frame *fr, int32_t id)
{
	struct err e;
	if (stream_took(stdin, h, fr, id, in_name, &e) < 0) {
		if (interrupted)
			die_of_sigint();
		lp_fail();
		cli_die("%s", e.msg);
	}
}

static int is_eos(const struct stream_header *h, int id)
{
	for (uint32_t i = 0; i < h->n_eos; i++)
		if (h->eos_ids[i] == id)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	double t_start = time_now();
	cli_init(&spec);
	parse_args(argc, argv);
	if (isatty(STDIN_FILENO))
		cli_die_usage("%s is a terminal: expected a logits stream (forward MODEL | sample)",
			  in_name);

	struct err e;
	struct stream_header h;
	if (stream_read_header(stdin, &h, in_name, &e) < 0)
		cli_die("%s", e.msg);
	struct sampler_params p = params(&h);

	uint64_t seed = (uint64_t)opt_seed;
	if (opt_seed < 0) {
		if (rng_system_seed(&seed, &e) < 0)
			cli_die("%s", e.msg);
		seed >>= 1; /* so that --seed can repeat it */
	}
	struct rng rng;
	rng_seed(&rng, seed);
	if (verbose)
		fprintf(stderr, "sample: seed %llu, temperature %g, top-k %d, top-p %g, "
			"min-p %g, repeat-penalty %g\n", (unsigned long long)seed,
			p.temperature, p.top_k, p.top_p, p.min_p, p.repetition_penalty);

	struct sampler *s = sampler_new((int)h.n_vocab, &e);
	if (!s)
		cli_die("%s", e.msg);
	int k = logprobs_k > (long)h.n_vocab ? (int)h.n_vocab : (int)logprobs_k;
	struct sampler_cand *top = NULL;
	if (logprobs_path) {
		top = malloc(sizeof *top * (size_t)(k > 0 ? k : 1));
		if (!top)
			cli_die("out of memory");
		lp_open();
	}

	/* Writes to a reader that went away must fail with EPIPE, not kill. */
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa_int = { .sa_handler = on_sigint, .sa_flags = SA_RESTART };
	sigemptyset(&sa_int.sa_mask);
	if (sigaction(SIGINT, NULL, &prev_int) == 0 && prev_int.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa_int, NULL);
	int fifo = -1;
	if (h.flags & STREAM_FLAG_FEEDBACK) {
		fifo = feedback_open_writer(h.fifo_path, &e);
		if (fifo < 0) {
			lp_fail();
			cli_die("%s", e.msg);
		}
	}

	struct stream_frame fr = { 0 };
	const char *why = "end of stream";
	int stdout_gone = 0;
	long n = 0;
	double t_first = 0, t_last = 0;
	int in_batch = 0;    /* frames of fr's batch follow it, unread */
	while (max_tokens < 0 || n < max_tokens) {
		int r = stream_read_frame(stdin, &h, &fr, in_name, &e);
		if (r < 0 && interrupted)
			die_of_sigint();  /* forward was interrupted too: no message */
		if (r < 0) {
			lp_fail();
			cli_die("%s", e.msg);
		}
		in_batch = r == 1 && fr.draft >= 0;
		if (r == 0)
			break;
		if (interrupted) {
			why = "interrupted";
			break;
		}
		int32_t id = -1;
		if (sampler_add_context(s, fr.fed, fr.n_fed, &e) == 0)
			id = sampler_next(s, fr.logits, &p, &rng, &e);
		if (id < 0) {
			lp_fail();
			cli_die("%s: frame at position %d: %s", in_name, fr.pos, e.msg);
		}
		int eos = !ignore_eos && is_eos(&h, id);
		if (!eos || emit_eos) {
			if (printf("%d\n", id) < 0 || fflush(stdout) != 0) {
				if (errno != EPIPE) {
					lp_fail();
					cli_die("write error: %s", strerror(errno));
				}
				why = "stdout closed";
				stdout_gone = 1;
				break;
			}
			n++;
			t_last = time_now();
			if (n == 1)
				t_first = t_last;
			if (lp)
				lp_write(s, &fr, id, k, top);
		}
		if (eos) {
			why = "end of sequence";
			break;
		}
		if (n == max_tokens) {
			why = "max tokens";
			break;
		}
		if (h.ctx && (uint32_t)fr.pos + 1 >= h.ctx) {
			/* forward's KV cache is full: it could not use the id. A
			 * text cut short says so, -v or not. */
			why = "context full";
			cli_warn("the context is full (%u positions; forward --ctx sets it): "
			     "generation stopped", h.ctx);
			break;
		}
		if (fifo >= 0 && feedback_send(fifo, id, &e) < 0) {
			/* forward is gone: what it wrote is still to be read. */
			close(fifo);
			fifo = -1;
		}
		took(&h, &fr, id);
		in_batch = 0;
	}
	/* Stopped inside a batch: read the rest, so that the end record
	 * comes next (a conversation reads it, docs/chat.md). */
	if (in_batch)
		took(&h, &fr, INT32_MAX);
	if (max_tokens == 0)
		why = "max tokens";
	/* Closing the FIFO is what ends the generation. */
	if (fifo >= 0)
		close(fifo);
	lp_close();
	if (verbose) {
		fprintf(stderr, "sample: stop: %s; %ld token%s", why, n, n == 1 ? "" : "s");
		if (n > 0)
			fprintf(stderr, ", first after %.3f s", t_first - t_start);
		if (n > 1)
			fprintf(stderr, ", %.2f tokens/s after it",
				(double)(n - 1) / (t_last - t_first));
		fputc('\n', stderr);
	}
	stream_frame_free(&fr);
	sampler_free(s);
	free(top);
	if (interrupted)
		die_of_sigint();
	if (stdout_gone)
		_exit(EXIT_PIPE);
	cli_exit(EXIT_OK);
}
