/* prefetch: how far ahead the matmul kernels ask for their weights.
 *
 * Decode streams each weight matrix from DRAM once per token, so a kernel
 * is only as fast as the memory requests it keeps in flight while it
 * computes. Every matmul kernel walks a block of adjacent rows together (up
 * to four), one stream per row, all at the same column, and the rows of a
 * block are contiguous: the next block begins block_bytes further on. A
 * row's stream prefetched prefetch_ahead(block_bytes) bytes past its loads
 * therefore lands on the same column of a row in a later block, at least
 * PREFETCH_MIN bytes ahead. Interleaved rows (weights.h) and the tiles
 * (qtile.h, btile.h, kquant.h) are one sequential stream each, which the
 * hardware prefetcher follows faster alone: the float row blocks on
 * interleaved rows and qtile's and btile's kernels leave it to the
 * hardware, asking only for each new page's first line ahead
 * (prefetch_page; qtile's scales sit in the stream just before their
 * codes, qtile.h); kquant's records, whose scales sit between the
 * codes, and on some processors qtile's Q5 tiles, whose fifth bits
 * follow each block's codes, ask for every line some KiB ahead
 * (prefetch_tuning) as well as for each new page (prefetch_lines), which
 * measured faster there.
 *
 * Why a block ahead: a prefetch a few hundred bytes ahead in the same row
 * falls inside rows of the current block that are already on their way,
 * and gains nothing. The distance was chosen by measurement (over the int8
 * matrices of Qwen2.5-0.5B, one thread); the figures and the command are
 * in docs/performance.md.
 */
#ifndef PREFETCH_H
#define PREFETCH_H

#include <stddef.h>
#include <stdint.h>
#include <xmmintrin.h>

#define PREFETCH_MIN 8192

/* The distance in bytes: PREFETCH_MIN rounded up to whole blocks. */
static inline size_t prefetch_ahead(size_t block_bytes)
{
	return (PREFETCH_MIN + block_bytes - 1) / block_bytes * block_bytes;
}

/* Asks for the cache line `ahead` bytes past p, into L2 (not L1: a core
 * has only a few L1 miss buffers, and with the lines requested into L1 the
 * int4 kernels kept too few in flight to stream at DRAM speed; the figures
 * are in docs/performance.md). A prefetch never faults, so past the end of
 * the matrix it is only a wasted request.
 *
 * always_inline, and called directly, not through a helper of its own:
 * GCC 12 finds a function whose body is nothing but prefetches "const" and
 * deletes the calls before inlining them, which left the int8 and int4
 * kernels of the previous version without a single prefetch instruction. */
static inline __attribute__((always_inline)) void prefetch_at(const void *p, size_t ahead)
{
	_mm_prefetch((const char *)p + ahead, _MM_HINT_T1);
}

/* How a stream asks ahead on this processor, chosen once by prefetch_tune
 * (which kernels_for calls before any kernel runs; docs/performance.md
 * has the measurements): whether prefetch_page asks for its line into L1
 * or into L2, how far ahead prefetch_lines asks, and whether the Q5 tiles
 * ask for every line (q5_lines). On the AMD Zen 5 VM the page's request
 * into L1 streamed int4 1.5 times as fast as none, lines 4 KiB ahead beat
 * 8, and the Q5 tiles were faster with the lines asked for; on the Zen 4
 * VM the same page request into L1 made int4 and int8 decode 15% slower
 * than one into L2 (or none), lines 8 KiB ahead streamed the K-quant
 * records 10% faster than 4, and the Q5 tiles' per-line requests cost
 * q4_k_m's decode 15%. So L1, 4 KiB and the Q5 lines on AMD family 26 and
 * later; L2, 8 KiB and the page only elsewhere (Intel unmeasured). */
struct prefetch_tuning {
	int page_l1;
	size_t line_ahead;
	int q5_lines;
};
extern struct prefetch_tuning prefetch_tuning;
void prefetch_tune(void);

/* Asks for each line of the `bytes` at p prefetch_tuning.line_ahead bytes
 * ahead, into L2: for a tiled kernel whose step through its stream the
 * hardware prefetchers follow badly alone, called once a step beside
 * prefetch_page. The K-quant records (scales between the codes, and bit
 * planes read beside the nibbles) are such steps, and on some processors
 * the Q5 tiles (a vector of fifth bits after each block's codes:
 * prefetch_tuning.q5_lines); the int4 and int8 tiles are not,
 * and streamed slower with it. always_inline for the reason above. */
static inline __attribute__((always_inline)) void prefetch_lines(const void *p, size_t bytes)
{
	size_t ahead = prefetch_tuning.line_ahead;
	for (size_t k = 0; k < bytes; k += 64)
		_mm_prefetch((const char *)p + k + ahead, _MM_HINT_T1);
}

/* Part i of n of prefetch_lines(p, bytes): its lines cut into n runs as
 * even as whole lines allow, for a long step whose work goes in n
 * stretches, each stretch asking for its run. The VNNI K-quant kernel
 * asks for a record's lines (2.4 to 3.4 KB) a sub-block at a time: all at
 * the record's start, a burst, they streamed slower (docs/performance.md,
 * "The K-quant records' requests spread out"). always_inline for the
 * reason above. */
static inline __attribute__((always_inline)) void prefetch_lines_part(const void *p, size_t bytes,
								      int i, int n)
{
	size_t lines = (bytes + 63) / 64, l0 = lines * (size_t)i / (size_t)n,
	       l1 = lines * (size_t)(i + 1) / (size_t)n;
	prefetch_lines((const char *)p + 64 * l0, 64 * (l1 - l0));
}

/* The page the hardware prefetchers cannot see past, and how far ahead
 * prefetch_page asks (two pages: measured, docs/performance.md). */
#define PREFETCH_PAGE 4096
#define PREFETCH_PAGE_AHEAD (2 * PREFETCH_PAGE)

/* For a kernel walking one sequential stream in steps of `step` bytes
 * (step <= PREFETCH_PAGE), called with each step's address p: on the step
 * that enters a 4 KiB page, asks for the first line of the page two on
 * (into L1 or L2, prefetch_tuning). The hardware prefetchers follow a
 * stream within a 4 KiB page only (they see physical addresses, and the
 * next page may be anywhere), so at every page boundary the stream stalls
 * until demand misses train them again; the early request starts each
 * page's stream before the loads reach it. One compare a step, one
 * request a page. always_inline for the reason above. */
static inline __attribute__((always_inline)) void prefetch_page(const void *p, size_t step)
{
	uintptr_t a = (uintptr_t)p;
	if ((a & (PREFETCH_PAGE - 1)) < step) {
		const char *next = (const char *)(a & ~(uintptr_t)(PREFETCH_PAGE - 1)) +
				   PREFETCH_PAGE_AHEAD;
		if (prefetch_tuning.page_l1)
			_mm_prefetch(next, _MM_HINT_T0);
		else
			_mm_prefetch(next, _MM_HINT_T1);
	}
}

#endif
