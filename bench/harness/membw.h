/* membw: this machine's memory read bandwidth, the speed limit of decode.
 *
 * Decoding one token reads every weight once, so tokens/s can never exceed
 * bandwidth / (weight bytes per token). membw_measure times a read-only
 * streaming pass over a buffer much larger than the caches (default 1 GiB;
 * this machine's L3 is 260 MiB), split between the threads of a pool by
 * 4 KiB pages, and reports the best of several passes: the best is the
 * closest to what the hardware can do, and noise only ever slows a pass.
 *
 * The pass sums the buffer with 256-bit loads (AVX2, when cpu_detect() says
 * so) or 64-bit scalar loads into several accumulators, so it is bound by
 * memory, not by a dependency chain. Every second pass adds the tiled
 * kernels' request for each page ahead (prefetch_page, prefetch.h), which
 * the hardware prefetchers cannot see past: which way streams faster
 * differs between machines, and the best pass of either is the limit no
 * kernel should pass. It writes nothing but the buffer's first fill (which
 * also faults every page in before timing).
 *
 * Left out: write and copy bandwidth, latency, NUMA placement (one node
 * here).
 */
#ifndef MEMBW_H
#define MEMBW_H

#include <stddef.h>
#include "core/err.h"
#include "core/timing.h"

#define MEMBW_BYTES_DEFAULT ((size_t)1 << 30)
#define MEMBW_REPS_DEFAULT 5

struct membw {
	int threads;
	size_t bytes;   /* buffer size */
	int reps;
	struct spread gbs;  /* 1e9 bytes per second over the passes: max is the
			     * figure (the best pass) */
};

/* Measures with `threads` threads (a pool of its own), `bytes` (rounded
 * down to whole 4 KiB pages, at least one page per thread) and `reps`
 * passes (>= 1). Allocates the buffer and frees it before returning.
 * Returns 0, or -1 with e set (memory, threads). */
int membw_measure(struct membw *r, int threads, size_t bytes, int reps, struct err *e);

/* The streaming sum itself over n bytes (n a multiple of 128, p 64-byte
 * aligned), with the kernels' prefetch or without; the AVX2 version is in
 * membw_avx2.c. Returned so the compiler cannot drop the loads. */
unsigned long long membw_sum_avx2(const void *p, size_t n, int prefetch);

#endif
