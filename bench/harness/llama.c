/* llama: one run of an external llama-bench (llama.h). */
#include "harness/llama.h"

#include <cJSON.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The last non-empty line of f (llama-bench's stderr), at most cap - 1
 * bytes of it, control characters replaced, so that it fits in a one-line
 * message; "" when there is none. */
static void last_line(FILE *f, char *out, size_t cap)
{
	char buf[4096];
	out[0] = '\0';
	if (fseek(f, 0, SEEK_END) != 0)
		return;
	long size = ftell(f);
	long from = size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0;
	if (size <= 0 || fseek(f, from, SEEK_SET) != 0)
		return;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	char *p = strrchr(buf, '\n');
	p = p ? p + 1 : buf;
	size_t i = 0;
	for (; p[i] && i + 1 < cap; i++)
		out[i] = (unsigned char)p[i] < 0x20 ? ' ' : p[i];
	out[i] = '\0';
}

/* Runs argv[0] with stdout into a buffer (*out, NUL-terminated, the
 * caller frees) and stderr into errf. posix_spawn, not fork: the caller
 * has worker threads, and glibc's posix_spawn reports a failed exec as its
 * return value. Returns the wait status, or -1 with e set when it could
 * not be started or read. */
static int run_capture(char *const argv[], FILE *errf, char **out, struct err *e)
{
	int fd[2];
	if (pipe(fd) < 0)
		return err_set(e, "%s: pipe: %s", argv[0], strerror(errno));
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc = posix_spawn_file_actions_init(&fa);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, fileno(errf), STDERR_FILENO);
	if (!rc)
		rc = posix_spawn_file_actions_addclose(&fa, fd[0]);
	if (!rc)
		rc = posix_spawn_file_actions_addclose(&fa, fd[1]);
	if (!rc)
		rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		close(fd[0]), close(fd[1]);
		return err_set(e, "%s: cannot run it: %s", argv[0], strerror(rc));
	}
	close(fd[1]);
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	rc = 0;
	for (;;) {
		if (!buf) {
			rc = err_set(e, "out of memory");
			break;
		}
		if (len + 1 == cap) {
			char *b = realloc(buf, cap *= 2);
			if (!b)
				free(buf);
			buf = b;
			continue;
		}
		ssize_t r = read(fd[0], buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = err_set(e, "%s: reading its output: %s", argv[0], strerror(errno));
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			free(buf);
			return err_set(e, "%s: waitpid: %s", argv[0], strerror(errno));
		}
	if (rc < 0) {
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	*out = buf;
	return status;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void copy_str(char *dst, size_t cap, const cJSON *o, const char *k, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	snprintf(dst, cap, "%s", cJSON_IsString(v) ? v->valuestring : dflt);
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
}

/* The one sample of a test: samples_ts must be an array of positive
 * numbers; with -r 1 it holds one. */
static int one_sample(const cJSON *rec, double *ts)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(rec, "samples_ts");
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 1)
		return -1;
	const cJSON *v = cJSON_GetArrayItem(a, 0);
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0))
		return -1;
	*ts = v->valuedouble;
	return 0;
}

/* Reads llama-bench's JSON lines into out; see llama.h. */
static int parse_output(const char *exe, char *text, const char *const *gguf, int n,
			int prompt, int tokens, int threads, struct llama_result *out,
			struct err *e)
{
	int line = 0;
	for (char *s = text, *next; *s; s = next) {
		next = strchr(s, '\n');
		next = next ? (*next = '\0', next + 1) : s + strlen(s);
		line++;
		if (strspn(s, " \t\r") == strlen(s))
			continue;
		cJSON *rec = cJSON_Parse(s);
		if (!cJSON_IsObject(rec)) {
			cJSON_Delete(rec);
			return err_set(e, "%s: output line %d: not a JSON object (-o jsonl)", exe,
				       line);
		}
		const cJSON *file = cJSON_GetObjectItemCaseSensitive(rec, "model_filename");
		int g = 0;
		while (g < n && !(cJSON_IsString(file) && !strcmp(file->valuestring, gguf[g])))
			g++;
		double np = num(rec, "n_prompt"), ng = num(rec, "n_gen"), ts;
		int prefill = np == prompt && ng == 0, decode = np == 0 && ng == tokens;
		if (g < n && num(rec, "n_threads") == threads && (prefill || decode)) {
			if (one_sample(rec, &ts) < 0) {
				cJSON_Delete(rec);
				return err_set(e, "%s: output line %d: samples_ts is not one "
					       "positive number", exe, line);
			}
			*(prefill ? &out[g].prefill_tok_s : &out[g].decode_tok_s) = ts;
			copy_str(out[g].model_type, sizeof out[g].model_type, rec, "model_type",
				 "unknown");
			copy_str(out[g].build, sizeof out[g].build, rec, "build_commit", "unknown");
		}
		cJSON_Delete(rec);
	}
	for (int g = 0; g < n; g++)
		if (!(out[g].prefill_tok_s > 0) || !(out[g].decode_tok_s > 0))
			return err_set(e, "%s: no %s result for %s at %d thread%s in its output",
				       exe, out[g].prefill_tok_s > 0 ? "decode" : "prefill",
				       gguf[g], threads, threads > 1 ? "s" : "");
	return 0;
}

int llama_bench_run(const char *exe, const char *const *gguf, int n, int prompt,
		    int tokens, int threads, struct llama_result *out, struct err *e)
{
	char p[16], t[16], th[16];
	snprintf(p, sizeof p, "%d", prompt);
	snprintf(t, sizeof t, "%d", tokens);
	snprintf(th, sizeof th, "%d", threads);
	const char *fixed[] = { "-p", p, "-n", t, "-t", th, "-r", "1", "-mmp", "0",
				"-o", "jsonl" };
	int nf = (int)(sizeof fixed / sizeof fixed[0]), k = 0;
	const char **argv = calloc((size_t)(2 + 2 * n + nf), sizeof *argv);
	if (!argv)
		return err_set(e, "out of memory");
	argv[k++] = exe;
	for (int g = 0; g < n; g++) {
		argv[k++] = "-m";
		argv[k++] = gguf[g];
	}
	for (int i = 0; i < nf; i++)
		argv[k++] = fixed[i];
	argv[k] = NULL;
	memset(out, 0, sizeof *out * (size_t)n);

	FILE *errf = tmpfile();
	if (!errf) {
		free(argv);
		return err_set(e, "%s: a temporary file for its stderr: %s", exe,
			       strerror(errno));
	}
	char *text = NULL;
	/* execv's argv is char *const[]; the strings are not written. */
	int status = run_capture((char *const *)argv, errf, &text, e), rc = -1;
	free(argv);
	char last[256];
	if (status < 0)
		rc = -1;  /* e is set */
	else if (WIFSIGNALED(status))
		err_set(e, "%s: killed by signal %d", exe, WTERMSIG(status));
	else if (WEXITSTATUS(status) != 0) {
		last_line(errf, last, sizeof last);
		err_set(e, "%s: exit status %d%s%s", exe, WEXITSTATUS(status),
			last[0] ? ": " : "", last);
	} else
		rc = parse_output(exe, text, gguf, n, prompt, tokens, threads, out, e);
	free(text);
	fclose(errf);
	return rc;
}
