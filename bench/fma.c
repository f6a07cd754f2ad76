/* bench/fma: this core's float32 multiply-add rate, the ceiling of every
 * prefill with float activations: twelve independent chains of 512-bit
 * FMAs (AVX-512), or 256-bit ones (AVX2), on one thread, no memory
 * traffic; the best of 5 passes of 10^8 steps, in 10^9 multiply-adds per
 * second. A prefill of Qwen2.5-0.5B is about 3.6e8 multiply-adds a token,
 * so this figure over 0.36 is the prompt tok/s no float32 kernel can pass
 * on one core. One JSON line on stdout; asserts nothing. Every chain is
 * kept in a register by an empty asm: the chains start from two values
 * only, so GCC merged the six it could prove equal and ran 8 of the 12,
 * which made the rate read 1.5 times too high before 2026-12-02.
 *
 *   make bench        (appends the line to bench/results.jsonl)
 */
#include "core/cpu.h"
#include "core/timing.h"

#include <immintrin.h>
#include <stdio.h>

enum { STEPS = 100000000, PASSES = 5 };

#define CHAINS(T, FMA)                                                        \
	T a0 = b, a1 = c, a2 = b, a3 = c, a4 = b, a5 = c, a6 = b, a7 = c,      \
	  a8 = b, a9 = c, a10 = b, a11 = c;                                   \
	double best = 0;                                                      \
	for (int p = 0; p < PASSES; p++) {                                    \
		double t0 = time_now();                                       \
		for (long k = 0; k < STEPS; k++) {                            \
			a0 = FMA(a0, b, c); a1 = FMA(a1, b, c);               \
			a2 = FMA(a2, b, c); a3 = FMA(a3, b, c);               \
			a4 = FMA(a4, b, c); a5 = FMA(a5, b, c);               \
			a6 = FMA(a6, b, c); a7 = FMA(a7, b, c);               \
			a8 = FMA(a8, b, c); a9 = FMA(a9, b, c);               \
			a10 = FMA(a10, b, c); a11 = FMA(a11, b, c);           \
			__asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2),   \
					 "+x"(a3), "+x"(a4), "+x"(a5));       \
			__asm__ volatile("" : "+x"(a6), "+x"(a7), "+x"(a8),   \
					 "+x"(a9), "+x"(a10), "+x"(a11));     \
		}                                                             \
		double g = (double)STEPS * 12 * (sizeof(T) / 4) / (time_now() - t0) / 1e9; \
		best = g > best ? g : best;                                   \
	}                                                                     \
	T s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;    \
	*sink = s[0];                                                         \
	return best;

__attribute__((target("avx512f"))) static double rate_avx512(float *sink)
{
	__m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
	CHAINS(__m512, _mm512_fmadd_ps)
}

__attribute__((target("avx2,fma"))) static double rate_avx2(float *sink)
{
	__m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
	CHAINS(__m256, _mm256_fmadd_ps)
}

int main(void)
{
	enum cpu_level l = cpu_detect();
	if (l < CPU_AVX2) {
		printf("{\"bench\":\"fma\",\"kernels\":\"scalar\",\"skipped\":true}\n");
		return 0;
	}
	float sink;
	double g = l == CPU_AVX512 ? rate_avx512(&sink) : rate_avx2(&sink);
	printf("{\"bench\":\"fma\",\"kernels\":\"%s\",\"threads\":1,\"chains\":12,"
	       "\"gmac_s\":%.1f,\"sink\":%g}\n", cpu_level_name(l), g, sink);
	return 0;
}
