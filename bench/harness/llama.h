/* llama: one run of an external llama.cpp `llama-bench`, so that `bench
 * --llama-bench` can alternate it with its own contenders.
 *
 * llama_bench_run runs EXE (the path as given: no PATH search, no shell) as
 *
 *   EXE -m G1 ... -m Gn -p PROMPT -n TOKENS -t THREADS -r 1 -mmp 0 -o jsonl
 *
 * and reads its JSON lines on stdout. For each GGUF file it expects one
 * prefill test (n_prompt PROMPT, n_gen 0) and one decode test (n_prompt 0,
 * n_gen TOKENS) at THREADS threads, each with samples_ts, the tokens/s of
 * its repetitions; with -r 1 there is one, so that the caller can put each
 * call inside one of its own repetitions. -mmp 0 reads the weights into
 * memory, as bench does by default (--weights copied). llama-bench's
 * warm-up run (its default) is not in samples_ts.
 *
 * llama-bench's stderr goes to a temporary file, never to ours: a failure's
 * message quotes its last line. Nothing of llama.cpp is linked or copied;
 * the program is whatever file the user names.
 */
#ifndef LLAMA_H
#define LLAMA_H

#include "core/err.h"

struct llama_result {
	double prefill_tok_s;   /* samples_ts of the prefill test */
	double decode_tok_s;    /* samples_ts of the decode test */
	char model_type[64];    /* llama-bench's model_type ("qwen2 1B Q8_0") */
	char build[64];         /* its build_commit, "unknown" when absent */
};

/* Runs EXE once on gguf[0..n) as above; fills out[0..n) in the order of
 * gguf. Returns 0, or -1 with e set: the program could not run, exited
 * non-zero or by a signal, or its output lacks a result or is not JSON
 * lines (the message names EXE, and the GGUF file or the line). */
int llama_bench_run(const char *exe, const char *const *gguf, int n, int prompt,
		    int tokens, int threads, struct llama_result *out, struct err *e);

#endif
