/* slot: a forward child process as a conversation context (slot.h). */
#define _GNU_SOURCE  /* pipe2 */
#include "serve/slot.h"

#include "format/feedback.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const fwd_name = "forward";

/* Writes all of s[0..n) to fd. */
static int write_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static void kill_forward(struct slot *sl)
{
	if (sl->to_fwd >= 0)
		close(sl->to_fwd);
	if (sl->from_fwd)
		fclose(sl->from_fwd);
	sl->to_fwd = -1;
	sl->from_fwd = NULL;
	if (sl->pid > 0)
		while (waitpid(sl->pid, NULL, 0) < 0 && errno == EINTR)
			;
	sl->pid = 0;
}

static int spawn(struct slot *sl, struct err *e)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return err_set(e, "pipe: %s", strerror(errno));
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return err_set(e, "pipe: %s", strerror(errno));
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		return err_set(e, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		/* forward starts with the default signal handling, whatever
		 * the server blocks or ignores (an exec keeps the mask) */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
			_exit(127);
		execv(sl->argv[0], sl->argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	sl->pid = pid;
	sl->to_fwd = in[1];
	sl->from_fwd = fdopen(out[0], "r");
	if (!sl->from_fwd) {
		close(out[0]);
		kill_forward(sl);
		return err_set(e, "out of memory");
	}
	/* "?": an end record alone, which says the context's size. */
	struct stream_header none = { 0 };
	struct stream_frame fr = { 0 };
	if (write_all(sl->to_fwd, "?\n", 2) < 0 ||
	    stream_read_frame(sl->from_fwd, &none, &fr, fwd_name, e) != 0 || !fr.ended) {
		stream_frame_free(&fr);
		kill_forward(sl);
		return err_set(e, "%s ended before it answered", sl->argv[0]);
	}
	sl->ctx = fr.end.ctx;
	sl->n_hist = 0;
	return 0;
}

int slot_start(struct slot *sl, char *const *argv, struct err *e)
{
	memset(sl, 0, sizeof *sl);
	sl->argv = argv;
	sl->to_fwd = -1;
	sl->fifo = -1;
	return spawn(sl, e);
}

void slot_stop(struct slot *sl)
{
	if (sl->fifo >= 0)
		close(sl->fifo);
	sl->fifo = -1;
	kill_forward(sl);
	stream_frame_free(&sl->fr);
	sampler_free(sl->s);
	free(sl->hist);
	sl->s = NULL;
	sl->hist = NULL;
}

int slot_common(const struct slot *sl, const int32_t *ids, int n)
{
	int k = 0;
	while (k < sl->n_hist && k < n - 1 && sl->hist[k] == ids[k])
		k++;
	return k;
}

/* After a failure of forward: a fresh one, with an empty context. */
static int restart(struct slot *sl, struct err *e)
{
	struct err e2;
	sl->active = 0;
	if (sl->fifo >= 0)
		close(sl->fifo);
	sl->fifo = -1;
	kill_forward(sl);
	sl->n_hist = 0;
	if (spawn(sl, &e2) < 0)
		err_set(e, "%s; restarting it failed: %s", e->msg, e2.msg);
	e->kind = ERR_WRITE;
	return -1;
}

static int hist_push(struct slot *sl, int32_t id)
{
	if (sl->n_hist == sl->cap) {
		int cap = sl->cap ? 2 * sl->cap : 1024;
		int32_t *p = realloc(sl->hist, sizeof *p * (size_t)cap);
		if (!p)
			return -1;
		sl->hist = p;
		sl->cap = cap;
	}
	sl->hist[sl->n_hist++] = id;
	return 0;
}

int slot_begin(struct slot *sl, const int32_t *ids, int n, const struct slot_params *q,
	       struct err *e)
{
	if (!sl->pid && spawn(sl, e) < 0)
		return -1;
	if (n < 1 || (uint32_t)n >= sl->ctx) {
		e->kind = ERR_INVALID;
		return err_set(e, "the prompt is %d tokens; the context holds %u (forward --ctx), "
			       "with room for at least one more", n, sl->ctx);
	}
	int keep = slot_common(sl, ids, n);
	/* "@keep", the rest of the prompt, a blank line */
	size_t cap = 16 + 12 * (size_t)(n - keep);
	char *line = malloc(cap), *w = line;
	if (!line)
		return err_set(e, "out of memory");
	w += sprintf(w, "@%d\n", keep);
	for (int i = keep; i < n; i++)
		w += sprintf(w, i + 1 < n ? "%d " : "%d\n\n", ids[i]);
	sl->n_hist = keep;
	for (int i = keep; i < n; i++)
		if (hist_push(sl, ids[i]) < 0) {
			free(line);
			return err_set(e, "out of memory");
		}
	int wr = write_all(sl->to_fwd, line, (size_t)(w - line));
	free(line);
	if (wr < 0 || stream_read_header(sl->from_fwd, &sl->h, fwd_name, e) < 0) {
		err_set(e, "forward ended (it printed why on the server's stderr)");
		return restart(sl, e);
	}
	if (!sl->s && !(sl->s = sampler_new((int)sl->h.n_vocab, e)))
		return -1;
	const struct stream_header *h = &sl->h;
	if (sampler_params_f32(&sl->p, h->temperature, h->top_k, h->top_p, h->min_p,
			       h->repetition_penalty, &q->over, e) < 0)
		return err_prefix(e, "forward's stream header");
	sl->fifo = feedback_open_writer(sl->h.fifo_path, e);
	if (sl->fifo < 0)
		return restart(sl, e);
	sampler_clear_context(sl->s);
	if (sampler_add_context(sl->s, ids, n, e) < 0) {
		sl->active = 1;
		slot_end(sl, &(struct err){ 0 });
		return -1;
	}
	rng_seed(&sl->rng, q->seed);
	sl->frames = 0;
	sl->active = 1;
	return keep;
}

int slot_next(struct slot *sl, struct slot_token *t, struct err *e)
{
	int r = stream_read_frame(sl->from_fwd, &sl->h, &sl->fr, fwd_name, e);
	if (r <= 0)
		return r;
	/* the first frame's fed ids are the prompt's, already in the context */
	if (sl->frames++ > 0 && sampler_add_context(sl->s, sl->fr.fed, sl->fr.n_fed, e) < 0)
		return -1;
	int32_t id = sampler_next(sl->s, sl->fr.logits, &sl->p, &sl->rng, e);
	if (id < 0)
		return err_prefix(e, "sampling");
	t->id = id;
	t->eos = 0;
	for (uint32_t i = 0; i < sl->h.n_eos; i++)
		t->eos |= sl->h.eos_ids[i] == id;
	t->last = sl->h.ctx && (uint32_t)sl->fr.pos + 1 >= sl->h.ctx;
	if (t->n_top > 0) {
		double lse = sampler_logsumexp(sl->s, sl->fr.logits);
		int k = t->n_top - 1;
		if (k > SLOT_MAX_TOP)
			k = SLOT_MAX_TOP;
		t->logprob = (float)(sl->fr.logits[id] - lse);  /* as the top ones */
		sampler_top(sl->s, sl->fr.logits, k, t->top);
		for (int i = 0; i < k; i++)
			t->top[i].x = (float)(t->top[i].x - lse);
	}
	return 1;
}

int slot_feed(struct slot *sl, int32_t id, struct err *e)
{
	if (hist_push(sl, id) < 0)
		return err_set(e, "out of memory");
	if (feedback_send(sl->fifo, id, e) < 0) {
		err_set(e, "forward ended (it printed why on the server's stderr)");
		return restart(sl, e);
	}
	return 0;
}

int slot_end(struct slot *sl, struct err *e)
{
	if (!sl->active)
		return 0;
	sl->active = 0;
	close(sl->fifo);
	sl->fifo = -1;
	/* what forward still writes: at most the frame of the last id fed */
	int r;
	while ((r = stream_read_frame(sl->from_fwd, &sl->h, &sl->fr, fwd_name, e)) == 1)
		;
	if (r < 0 || !sl->fr.ended) {
		if (r == 0)
			err_set(e, "forward ended (it printed why on the server's stderr)");
		return restart(sl, e);
	}
	sl->computed = sl->fr.end.computed;
	if (sl->fr.end.n_past != (uint32_t)sl->n_hist) {
		err_set(e, "forward's context holds %u positions where %d were expected",
			sl->fr.end.n_past, sl->n_hist);
		return restart(sl, e);
	}
	return 0;
}
