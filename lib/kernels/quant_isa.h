/* quant_isa: the per-ISA kernels behind lib/kernels/quant.h (internal to lib/).
 *
 * Each function computes rows [r0, r1) of y_t = W x_t (t < T) for one
 * matrix type, with the arguments of quant_matmul; the
 * *_avx2 / *_avx512 / *_vnni files are compiled for that ISA only, and
 * quant.c calls them after checking CPUID.
 */
#ifndef QUANT_ISA_H
#define QUANT_ISA_H

#include "kernels/quant.h"

typedef void quant_matmul_fn(const struct wmat *w, float *y, int ldy, int r0,
			     int r1, const float *x, int ldx, int T);

quant_matmul_fn q8_matmul_scalar, q8_matmul_avx2, q8_matmul_avx512;
/* Group-scaled codes, int4 and int8 (WT_Q8 with a group_size): one scalar
 * reference for both. */
quant_matmul_fn grp_matmul_scalar;
quant_matmul_fn q4_matmul_avx2, q4_matmul_avx512;
quant_matmul_fn q8g_matmul_avx2, q8g_matmul_avx512;
/* q8a_quantize: the scheme's definition one value at a time, and the same
 * bits 32 values at a time (AVX-512). */
void q8a_quantize_scalar(const float *x, int n, struct q8act *a);
void q8a_quantize_avx512(const float *x, int n, struct q8act *a);

#endif
