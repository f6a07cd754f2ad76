/* attntrace: the attention weights of forward calls, as JSON lines.
 *
 * A forward_attn_fn (lib/model/forward.h) that records into a buffer while a call
 * runs, and a writer that turns the call into lines afterwards, one per
 * (layer, query position), layers in order, positions ascending:
 *
 *   {"call":C,"layer":L,"pos":P,"w":[[w_0,...,w_P],...]}
 *
 * C counts the calls written, from 0; "w" holds one row per query head,
 * head 0 first: the softmax weights over key positions 0..P (each row sums
 * to 1 up to rounding), printed with %.9g so they read back as the same
 * float32 values.
 *
 * Why JSON lines and not a binary layout: the traces this is for (a page, a
 * test with jq) are short generations of small models, where one call is a
 * few kilobytes of text that jq reads directly. The cost grows with
 * n_layers * n_heads * positions^2 / 2 (about 12 bytes a weight): for
 * Qwen2.5-0.5B (24 layers, 14 heads), 100 positions traced one token at a
 * time is about 20 MB, 600 is about 700 MB, where a binary layout would be
 * a third of that and still too much to look at.
 *
 * Memory: the buffer holds one call, n_layers * n * n_heads * (p0 + n)
 * floats for n new positions after p0 cached ones; it is allocated (grown)
 * by attn_trace_begin, never while forward runs.
 */
#ifndef ATTNTRACE_H
#define ATTNTRACE_H

#include <stddef.h>
#include <stdio.h>
#include "core/err.h"

struct attn_trace {
	FILE *fp;            /* where the lines go; the caller opens and closes it */
	int n_layers, n_heads;
	long call;           /* calls written so far */
	int p0, n;           /* the call being recorded: positions p0 .. p0 + n - 1 */
	float *w;            /* [n_layers x n x n_heads x (p0 + n)] */
	size_t cap;          /* floats allocated at w */
};

/* Sets up t to write to fp; allocates nothing. */
void attn_trace_init(struct attn_trace *t, FILE *fp, int n_layers, int n_heads);

/* Prepares to record a call of n positions after p0 cached ones: grows the
 * buffer when needed. Returns 0, or -1 with e set when out of memory. */
int attn_trace_begin(struct attn_trace *t, int p0, int n, struct err *e);

/* The forward_attn_fn: arg is the struct attn_trace. Safe to call
 * concurrently for distinct (layer, pos, head). */
void attn_trace_record(void *arg, int layer, int pos, int head, const float *w,
		       int n);

/* Writes the recorded call's lines. Returns 0, or -1 with e set on a write
 * error (errno kept). */
int attn_trace_write(struct attn_trace *t, struct err *e);

/* Frees the buffer (not fp). */
void attn_trace_free(struct attn_trace *t);

#endif
