/* stream: the binary logits stream between `forward` and its readers
 * (`sample`, `forward --dump`, anything else).
 *
 * Byte layout, all integers and floats little-endian:
 *
 *   header (STREAM_HEADER_SIZE = 4240 bytes, fixed)
 *     0    8  magic "QWLOGITS"
 *     8    4  u32 version (STREAM_VERSION = 3); readers refuse any other
 *                 (version 2 had no draft field in its frames)
 *    12    4  u32 n_vocab
 *    16    4  u32 dtype (0 = float32 little-endian; nothing else yet)
 *    20    4  u32 n_eos (0..8)
 *    24   32  i32 eos_ids[8] (unused slots -1)
 *    56    4  f32 temperature         generation defaults from the model's
 *    60    4  i32 top_k                generation_config.json (0 = off)
 *    64    4  f32 top_p                (1 = off)
 *    68    4  f32 min_p                (0 = off)
 *    72    4  f32 repetition_penalty   (1 = off)
 *    76    4  u32 flags: bit 0 = STREAM_FLAG_FEEDBACK (forward waits for ids
 *                 on the feedback FIFO), bit 1 = STREAM_FLAG_ALL (a frame
 *                 for every position)
 *    80    4  u32 ctx: positions the forward's KV cache holds
 *    84   60  reserved, zero
 *   144 4096  feedback FIFO path, NUL-terminated (empty when no feedback)
 *   4240     end of header
 *
 *   then frames, each:
 *     0    4  magic "FRME"
 *     4    4  i32 pos: position of the logits row (0-based)
 *     8    4  u32 n_fed: how many ids were fed since the previous frame
 *    12    4  i32 draft: the id this frame's batch assumed at pos + 1, or -1
 *                 (the batch ends with this frame)
 *    16  4*n_fed  i32 ids fed, in order; the last one is the token at pos
 *     .  4*n_vocab  f32 logits
 *
 *   then the end record (STREAM_END_SIZE = 16 bytes):
 *     0    4  magic "ENDG"
 *     4    4  u32 n_past: positions the context holds now
 *     8    4  u32 computed: positions computed for this stream (its prompt
 *                 and every id fed back; more with forward --no-cache)
 *    12    4  u32 ctx, as in the header
 *
 * So a reader knows the whole context (for the repetition penalty) from the
 * frames alone: the first frame of a generation carries the prompt, each
 * later one the single id that was fed back. End of input between frames
 * is also a clean end (forward was stopped); the end record says that
 * forward finished the stream and what its context holds.
 *
 * Speculative frames (forward --draft, prompt-lookup drafting). forward
 * may run a batch: the id fed back, t, at position p, then k drafted ids
 * d1..dk it guessed would follow, all in one pass, and write their k + 1
 * frames at once: the frame at p + j (j < k) has draft d(j+1), the last
 * has draft -1, and the frame at p + j + 1 has fed = {d(j+1)}. Each frame's
 * logits are exactly those that running the same ids one at a time would
 * give (the engine's logits are bitwise equal for any chunking), so a
 * reader verifies the drafts by doing with each frame what it would do
 * without them:
 *   - it draws its token from the frame as always (the same random draws);
 *   - if the token equals the frame's draft, the next frame (fed = that
 *     token) is the one it would have got: it goes on with it;
 *   - otherwise (the token differs, or the draft is -1) it reads and
 *     discards the rest of the batch (stream_skip_batch: the frames up to
 *     and including the next one whose draft is -1), whose fed ids it never
 *     adds to its context, and sends the token back.
 * stream_took does either, given the token drawn.
 * A reader that stops (end of sequence, a limit, a signal) also skips the
 * rest of the batch it is in, so that what follows is the end record.
 * The ids a reader sends back are exactly those it would send without
 * drafts: every token it draws (but the one it stops on), in order.
 * forward takes an id that equals the next draft as accepting it, keeps
 * the positions of the accepted prefix in its KV cache and discards the
 * rest when the next id differs or the feedback ends. Frames without
 * drafting (scoring, forward --draft 0, the prompt's frame) have draft -1.
 *
 * A conversation (forward keeps its context between prompts,
 * tools/forward/main.c) is a series of these streams on the same pipe,
 * each a header, its frames and its end record, one per prompt. A reader
 * of one stream stops at its end record and leaves the next stream
 * unread. An end record can also come alone, as the answer to a query.
 */
#ifndef STREAM_H
#define STREAM_H

#include <stdint.h>
#include <stdio.h>
#include "core/err.h"

#define STREAM_MAGIC "QWLOGITS"
#define STREAM_VERSION 3
#define STREAM_HEADER_SIZE 4240
#define STREAM_PATH_MAX 4096
#define STREAM_MAX_EOS 8
#define STREAM_FLAG_FEEDBACK 1u
#define STREAM_FLAG_ALL 2u
#define STREAM_END_SIZE 16

struct stream_header {
	uint32_t version;
	uint32_t n_vocab;
	uint32_t dtype;
	uint32_t n_eos;
	int32_t eos_ids[STREAM_MAX_EOS];
	float temperature;
	int32_t top_k;
	float top_p;
	float min_p;
	float repetition_penalty;
	uint32_t flags;
	uint32_t ctx;
	char fifo_path[STREAM_PATH_MAX];
};

/* The end record. */
struct stream_end {
	uint32_t n_past;
	uint32_t computed;
	uint32_t ctx;
};

struct stream_frame {
	int32_t pos;
	uint32_t n_fed;
	int32_t draft;     /* the id assumed at pos + 1 by this batch, or -1 */
	int32_t *fed;      /* n_fed ids; owned by the frame, grown as needed */
	uint32_t fed_cap;
	float *logits;     /* n_vocab floats; owned by the frame */
	int took;          /* stream_took: the reader took the draft, which the
			    * next frame must carry (0 in a new frame) */
	int ended;         /* stream_read_frame met the end record ... */
	struct stream_end end;  /* ... which said this */
};

/* Writes the header. Returns 0, or -1 with e set (errno kept: EPIPE means
 * the reader went away). */
int stream_write_header(FILE *f, const struct stream_header *h, struct err *e);

/* Writes one frame; draft is -1 or the id the batch assumed at pos + 1. */
int stream_write_frame(FILE *f, int32_t pos, const int32_t *fed, uint32_t n_fed,
		       int32_t draft, const float *logits, uint32_t n_vocab,
		       struct err *e);

/* Writes the end record to fd with one write(2), after the caller has
 * flushed what it buffered for fd: unbuffered, so that a reader that has
 * gone is seen here (ERR_WRITE with errnum EPIPE, SIGPIPE ignored) and
 * leaves nothing behind in a buffer. Returns 0, or -1 with e set. */
int stream_write_end(int fd, const struct stream_end *end, struct err *e);

/* Reads and checks a header; name (e.g. "<stdin>") is used in messages:
 * "<stdin>: not a logits stream (bad magic)", "<stdin>: logits stream
 * version 2 is not supported (this reader knows version 1)",
 * "<stdin>: truncated header". */
int stream_read_header(FILE *f, struct stream_header *h, const char *name,
		       struct err *e);

/* Reads the next frame into fr (allocated on first use, sized from h;
 * zero-initialise it before the first call). Returns 1 for a frame; 0 at a
 * clean end of stream: the end record (read whole, fr->ended set and
 * fr->end filled; f is left right after it) or EOF exactly between frames
 * (fr->ended 0), with fr->draft -1; -1 on error ("<stdin>: truncated frame
 * at position 5"; after stream_took, "<stdin>: corrupt logits stream: the
 * frame at position 8 does not continue the draft 42"). */
int stream_read_frame(FILE *f, const struct stream_header *h,
		      struct stream_frame *fr, const char *name, struct err *e);

/* After fr, a frame whose draft the reader does not take (its token
 * differs, or the reader stops there): reads and discards the frames after
 * it in the same batch, so that the next read is the next batch's first
 * frame or the end record. Nothing when fr->draft is -1. fr is overwritten
 * (its fed ids are not the context). Returns 0; 0 also at EOF (forward
 * stopped: the next read sees it); -1 on error, as stream_read_frame, and
 * when the stream ends the batch with its end record. */
int stream_skip_batch(FILE *f, const struct stream_header *h,
		      struct stream_frame *fr, const char *name, struct err *e);

/* The reader drew id from fr: when id is fr's draft, marks it taken (the
 * next frame must continue the batch with it) and returns 1; otherwise
 * reads the rest of the batch (stream_skip_batch) and returns 0; -1 on
 * error. */
int stream_took(FILE *f, const struct stream_header *h, struct stream_frame *fr,
		int32_t id, const char *name, struct err *e);

void stream_frame_free(struct stream_frame *fr);

#endif
