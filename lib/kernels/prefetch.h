/* prefetch: how far ahead the matmul kernels ask for their weights.
 *
 * Decode streams each weight matrix from DRAM once per token, so a kernel
 * is only as fast as the memory requests it keeps in flight while it
 * computes. Every matmul kernel walks a block of adjacent rows together (up
 * to four), one stream per row, all at the same column, and the rows of a
 * block are contiguous: the next block begins block_bytes further on. A
 * row's stream prefetched prefetch_ahead(block_bytes) bytes past its loads
 * therefore lands on the same column of a row in a later block, at least
 * PREFETCH_MIN bytes ahead. Interleaved rows (weights.h) are one stream,
 * which the hardware prefetcher follows faster alone: they are not
 * prefetched. The tiles (qtile.h, btile.h, kquant.h) are one sequential
 * stream each too: qtile's and btile's kernels leave it to the hardware,
 * qtile's asking only for each tile's scale area first (prefetch_area);
 * kquant's records, whose scales sit between the codes, ask for every line
 * PREFETCH_MIN bytes ahead, which measured faster there.
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

/* Asks for the `bytes` at p into L1. A tiled kernel calls it as it starts
 * a tile, with the tile's scale area (read a little at a time beside the
 * codes, and in the int8 tiles with a scale per row only at the end): so
 * the area's lines are asked for before the codes behind them, in address
 * order, a stream the hardware prefetcher follows alone. Without it, the
 * area's demand misses behind the codes already streaming stopped the
 * hardware prefetcher at each tile on the AMD EPYC VM, and decode ran at a
 * third of the bandwidth (docs/performance.md). always_inline for the
 * reason above. */
static inline __attribute__((always_inline)) void prefetch_area(const void *p, size_t bytes)
{
	for (size_t k = 0; k < bytes; k += 64)
		_mm_prefetch((const char *)p + k, _MM_HINT_T0);
}

#endif
