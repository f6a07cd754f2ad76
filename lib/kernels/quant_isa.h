/* quant_isa: the per-ISA kernels behind lib/kernels/quant.h (internal to
 * lib/kernels).
 *
 * Each product is an entry of the kernel table (struct kernels,
 * lib/kernels/kernels.h: mm[WT_Q8 or WT_Q4][KA_F32]); the *_avx2 /
 * *_avx512 files are compiled for that ISA only, and kernels_for puts
 * them in the table of a level the CPU has.
 */
#ifndef QUANT_ISA_H
#define QUANT_ISA_H

#include "kernels/kernels.h"
#include "kernels/quant.h"

/* The float-activation products (the exact mode), by level: int8 (a
 * scale per row, or per group: GGUF's Q8_0) and int4. */
kern_mm_fn q8_mm_scalar, q8_mm_avx2, q8_mm_avx512;
kern_mm_fn q4_mm_scalar, q4_mm_avx2, q4_mm_avx512;
/* q8a_quantize: the scheme's definition one value at a time, and the same
 * bits 32 values at a time (AVX-512); both end with q8a_sums. */
void q8a_quantize_scalar(const float *x, int n, struct q8act *a);
void q8a_quantize_avx512(const float *x, int n, struct q8act *a);
/* Fills a->sums and a->hsums from its codes. */
void q8a_sums(struct q8act *a);

#endif
