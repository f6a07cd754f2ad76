/* bin/sample in the generation loop, with this test playing forward: it
 * creates the feedback FIFO (lib/format/feedback.h), writes the logits stream of a
 * made-up model to sample's stdin and answers each id fed back with the next
 * frame. Checks the ids written, the ids fed back, the exit status, the stop
 * cases, and that no FIFO directory is left in a private TMPDIR.
 *
 * The made-up model (V = 64, end of sequence 63): after token t the logits
 * peak at next(t) (logit 4, all others 0), so greedy decoding follows
 * next(). With drafts (run.draft), the test drafts as forward --draft
 * does (lib/format/stream.h): each id fed back runs with up to that many
 * guessed ids, some right and some wrong, as one batch of frames; sample
 * must write and feed back exactly what it does without them. The binary
 * comes from $BIN (bin/ by default, build/san/bin under
 * `make check`). */
#include "check.h"
#include "format/feedback.h"
#include "format/stream.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { V = 64, EOS = 63 };

static char sample_bin[4096];
static char tmpdir[4096];

static int next(int t)
{
	return t == 40 ? EOS : (t * 5 + 1) % 60;
}

struct run {
	/* in */
	const char *const *args;    /* sample's arguments after argv[0] */
	const int32_t *prompt;
	int n_prompt;
	float temperature;          /* the header's default */
	int max_frames;             /* forward stops (killed) after this */
	uint32_t ctx;               /* the header's context size (0: 100) */
	int flat;                   /* logits: a fixed, soft distribution (2: and
				     * the end of sequence among the likely) */
	int draft;                  /* drafts per batch (0: none) */
	int close_stdout;           /* the reader of sample's stdout is gone */
	/* out */
	char out[4096];             /* sample's stdout */
	char err[4096];             /* sample's stderr (checked, not shown) */
	int fed[256], n_fed;        /* ids forward received */
	int status;                 /* sample's exit status, 128+sig if killed */
	int drafted, taken;         /* drafts written, and accepted */
};

static void logits_for(const struct run *r, int last, float *x)
{
	for (int j = 0; j < V; j++)
		x[j] = r->flat ? (float)(j % 7) * 0.1f : 0;
	if (r->flat) {
		x[10] = 1.0f;
		x[11] = 0.95f;
		x[EOS] = r->flat == 2 ? 0.9f : -100; /* else as long as -n says */
	} else {
		x[next(last)] = 4;
	}
}

/* The guess for position pos after prev: often right, not always. */
static int guess(const struct run *r, int prev, int pos)
{
	if (r->flat)
		return r->flat == 2 && pos % 5 == 0 ? EOS : pos % 3 ? 10 : 11;
	return pos % 4 ? next(prev) : (next(prev) + 1) % 60;
}

/* Plays forward for one run of sample. */
static void play(struct run *r)
{
	struct err e;
	struct feedback fb;
	CHECK(feedback_open(&fb, &e) == 0, "feedback_open: %s", e.msg);
	int in[2], out[2], errp[2];
	if (pipe(in) < 0 || pipe(out) < 0 || pipe(errp) < 0)
		abort();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(errp[1], 2);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		close(errp[0]); close(errp[1]);
		close(fb.fd);
		const char *argv[16] = { sample_bin };
		int n = 1;
		for (const char *const *a = r->args; *a; a++)
			argv[n++] = *a;
		execv(sample_bin, (char **)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(errp[1]);
	if (r->close_stdout)
		close(out[0]);
	signal(SIGPIPE, SIG_IGN);
	FILE *f = fdopen(in[1], "w");
	struct stream_header h = {
		.n_vocab = V, .n_eos = 1, .eos_ids = { EOS }, .temperature = r->temperature,
		.top_k = 0, .top_p = 1, .min_p = 0, .repetition_penalty = 1,
		.flags = STREAM_FLAG_FEEDBACK, .ctx = r->ctx ? r->ctx : 100,
	};
	snprintf(h.fifo_path, sizeof h.fifo_path, "%s", fb.path);
	float x[V];
	int pos = r->n_prompt - 1, frames = 0, last = r->prompt[r->n_prompt - 1];
	int batch[16], n_drafts = 0, taken = 0;  /* the batch at pos .. pos + n_drafts */
	r->n_fed = r->drafted = r->taken = 0;
	int ok = stream_write_header(f, &h, &e) == 0;
	logits_for(r, last, x);
	ok = ok && stream_write_frame(f, pos, r->prompt, (uint32_t)r->n_prompt, -1, x, V, &e) == 0 &&
	     fflush(f) == 0;
	frames++;
	while (ok && frames < r->max_frames) {
		int id;
		int got = feedback_next(&fb, -1, 5000, &id, &e);
		if (got <= 0)
			break;
		r->fed[r->n_fed++] = id;
		if (taken < n_drafts && id == batch[1 + taken]) {
			taken++;
			r->taken++;
			continue;
		}
		pos += 1 + taken;
		int room = (int)h.ctx - pos - 1;
		n_drafts = r->draft < room ? r->draft : room;
		taken = 0;
		batch[0] = id;
		for (int i = 1; i <= n_drafts; i++)
			batch[i] = guess(r, batch[i - 1], pos + i);
		r->drafted += n_drafts;
		for (int j = 0; j <= n_drafts && ok; j++) {
			logits_for(r, batch[j], x);
			ok = stream_write_frame(f, pos + j, batch + j, 1,
						j < n_drafts ? batch[j + 1] : -1, x, V, &e) == 0;
		}
		ok = ok && fflush(f) == 0;
		frames++;
	}
	fclose(f);
	feedback_close(&fb);
	int st;
	waitpid(pid, &st, 0);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	size_t n = 0;
	if (!r->close_stdout) {
		ssize_t k;
		while (n < sizeof r->out - 1 &&
		       (k = read(out[0], r->out + n, sizeof r->out - 1 - n)) > 0)
			n += (size_t)k;
		close(out[0]);
	}
	r->out[n] = 0;
	/* sample's messages are a line or two: the pipe held them */
	ssize_t k = read(errp[0], r->err, sizeof r->err - 1);
	r->err[k > 0 ? k : 0] = 0;
	close(errp[0]);
}

static int tmpdir_empty(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n == 0;
}

/* The greedy chain from the prompt's last id: n ids as lines. */
static void chain(int last, int n, char *buf)
{
	buf[0] = 0;
	for (int i = 0; i < n; i++) {
		last = next(last);
		sprintf(buf + strlen(buf), "%d\n", last);
	}
}

int main(void)
{
	const char *bin = getenv("BIN");
	snprintf(sample_bin, sizeof sample_bin, "%s/sample", bin && *bin ? bin : "bin");
	snprintf(tmpdir, sizeof tmpdir, "/tmp/test_sample_loop.XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
	setenv("TMPDIR", tmpdir, 1);
	alarm(60); /* a hang is a failure, not a stuck test suite */

	const int32_t prompt[] = { 5, 2 };
	char want[1024];

	/* -n 5, greedy from the header (temperature 0): 5 ids, 4 fed back (the
	 * 5th is not needed), then the FIFO closes and forward stops. */
	struct run a = { .args = (const char *[]){ "-n", "5", NULL }, .prompt = prompt,
			 .n_prompt = 2, .temperature = 0, .max_frames = 100 };
	play(&a);
	chain(2, 5, want);
	CHECK(a.status == 0 && !strcmp(a.out, want), "-n 5: status %d, out '%s', want '%s'",
	      a.status, a.out, want);
	CHECK(a.n_fed == 4 && a.fed[0] == next(2) && a.fed[3] == next(next(next(next(2)))),
	      "-n 5: %d ids fed back", a.n_fed);
	CHECK(tmpdir_empty(), "-n 5: %s not empty", tmpdir);

	/* End of sequence: next(40) is EOS (and only a prompt can end in 40:
	 * 5t + 1 = 40 mod 60 has no solution). Not written, nothing fed. */
	const int32_t to_eos[] = { 3, 40 };
	struct run b = { .args = (const char *[]){ "-n", "9", NULL }, .prompt = to_eos,
			 .n_prompt = 2, .max_frames = 100 };
	play(&b);
	CHECK(b.status == 0 && b.out[0] == 0 && b.n_fed == 0,
	      "EOS first: status %d, out '%s', %d fed", b.status, b.out, b.n_fed);
	struct run b2 = b;
	b2.args = (const char *[]){ "--emit-eos", NULL };
	play(&b2);
	CHECK(b2.status == 0 && !strcmp(b2.out, "63\n") && b2.n_fed == 0,
	      "--emit-eos: status %d, out '%s'", b2.status, b2.out);
	/* --ignore-eos goes on past it: 63 -> 16 -> 21. */
	struct run b3 = b;
	b3.args = (const char *[]){ "--ignore-eos", "-n", "3", NULL };
	play(&b3);
	CHECK(b3.status == 0 && !strcmp(b3.out, "63\n16\n21\n"),
	      "--ignore-eos: status %d, out '%s'", b3.status, b3.out);

	/* Forward stops after 3 frames (context full): the end of the stream
	 * ends sample, status 0, 3 ids. */
	struct run c = { .args = (const char *[]){ "--greedy", "-n", "10", NULL },
			 .prompt = prompt, .n_prompt = 2, .temperature = 1, .max_frames = 3 };
	play(&c);
	chain(2, 3, want);
	CHECK(c.status == 0 && !strcmp(c.out, want), "end of stream: status %d, out '%s'",
	      c.status, c.out);

	/* A context of 6 positions, 2 taken by the prompt: frames at positions
	 * 1..5, so 5 tokens; the last is not fed back (forward could not use
	 * it), and sample stops by itself. */
	struct run c2 = { .args = (const char *[]){ "-n", "10", NULL }, .prompt = prompt,
			  .n_prompt = 2, .max_frames = 100, .ctx = 6 };
	play(&c2);
	chain(2, 5, want);
	CHECK(c2.status == 0 && !strcmp(c2.out, want) && c2.n_fed == 4,
	      "context full: status %d, out '%s', %d fed", c2.status, c2.out, c2.n_fed);
	CHECK(!strcmp(c2.err, "sample: warning: the context is full (6 positions; forward "
		      "--ctx sets it): generation stopped\n"),
	      "context full: stderr '%s'", c2.err);

	/* The reader of stdout is gone: 141, nothing fed back, FIFO closed. */
	struct run d = { .args = (const char *[]){ NULL }, .prompt = prompt, .n_prompt = 2,
			 .max_frames = 100, .close_stdout = 1 };
	play(&d);
	CHECK(d.status == 141 && d.n_fed == 0, "stdout closed: status %d, %d fed",
	      d.status, d.n_fed);

	/* The repetition penalty counts the ids of every frame: prompt {10}
	 * makes 11 win (1/1.1 < 0.95), then 11 is in the context too and 10
	 * wins (0.909 > 0.95/1.1). Ignoring later frames' ids would give
	 * 11 11 11. */
	const int32_t ten[] = { 10 };
	struct run g = { .args = (const char *[]){ "--greedy", "--repeat-penalty", "1.1",
						    "-n", "3", NULL },
			 .prompt = ten, .n_prompt = 1, .max_frames = 100, .flat = 1 };
	play(&g);
	CHECK(g.status == 0 && !strcmp(g.out, "11\n10\n10\n"),
	      "repetition penalty: status %d, out '%s'", g.status, g.out);

	/* Seeds: the same seed, the same ids; another seed, other ids. */
	struct run s1 = { .args = (const char *[]){ "--seed", "7", "-n", "24", NULL },
			  .prompt = prompt, .n_prompt = 2, .temperature = 1,
			  .max_frames = 100, .flat = 1 };
	struct run s2 = s1, s3 = s1;
	s3.args = (const char *[]){ "--seed", "8", "-n", "24", NULL };
	play(&s1);
	play(&s2);
	play(&s3);
	CHECK(s1.status == 0 && strlen(s1.out) > 24 && !strcmp(s1.out, s2.out),
	      "same seed: '%s' vs '%s'", s1.out, s2.out);
	CHECK(strcmp(s1.out, s3.out) != 0, "seeds 7 and 8 agree: '%s'", s1.out);

	/* Drafts change nothing: greedy, a full context, sampling with the
	 * penalty, an end of sequence drawn inside a batch, stdout gone. */
	const int32_t nine[] = { 9 };
	struct run same[] = {
		{ .args = (const char *[]){ "-n", "20", NULL }, .prompt = prompt,
		  .n_prompt = 2, .max_frames = 100 },
		{ .args = (const char *[]){ "-n", "50", NULL }, .prompt = prompt,
		  .n_prompt = 2, .max_frames = 100, .ctx = 13 },
		{ .args = (const char *[]){ "--seed", "3", "-n", "40", "--repeat-penalty",
					    "1.05", NULL },
		  .prompt = nine, .n_prompt = 1, .temperature = 0.2f, .max_frames = 100,
		  .flat = 1 },
		{ .args = (const char *[]){ "--seed", "5", "--emit-eos", NULL },
		  .prompt = nine, .n_prompt = 1, .temperature = 0.2f, .max_frames = 100,
		  .flat = 2 },
		{ .args = (const char *[]){ NULL }, .prompt = prompt, .n_prompt = 2,
		  .max_frames = 100, .close_stdout = 1 },
	};
	for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
		struct run off = same[i], on = same[i];
		on.draft = 4;
		play(&off);
		play(&on);
		int fed_same = off.n_fed == on.n_fed &&
			!memcmp(off.fed, on.fed, sizeof *off.fed * (size_t)off.n_fed);
		CHECK(off.status == on.status && !strcmp(off.out, on.out) && fed_same,
		      "drafts, case %zu: status %d / %d, out '%s' / '%s', %d / %d fed", i,
		      off.status, on.status, off.out, on.out, off.n_fed, on.n_fed);
		CHECK(on.close_stdout || (on.taken > 0 && on.taken < on.drafted),
		      "drafts, case %zu: %d drafted, %d taken", i, on.drafted, on.taken);
		CHECK(i != 3 || strstr(on.out, "\n63\n"), "drafts, case 3: no end of "
		      "sequence after the first token: '%s'", on.out);
	}

	CHECK(tmpdir_empty(), "%s not empty at the end", tmpdir);
	rmdir(tmpdir);
	return check_done("test_sample_loop");
}
