/* membw_avx2: the AVX2 streaming sum of membw.h (called only after
 * cpu_detect() said AVX2). Four independent 256-bit accumulators: two
 * cache lines per iteration, no dependency chain longer than the loads;
 * with `prefetch`, the tiled kernels' request for each page ahead
 * (prefetch_page, prefetch.h). */
#include "harness/membw.h"
#include "kernels/prefetch.h"

#include <immintrin.h>

unsigned long long membw_sum_avx2(const void *p, size_t n, int prefetch)
{
	const unsigned char *b = p;
	__m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
	for (size_t i = 0; i + 128 <= n; i += 128) {
		if (prefetch)
			prefetch_page(b + i, 128);
		s0 = _mm256_add_epi64(s0, _mm256_load_si256((const __m256i *)(b + i)));
		s1 = _mm256_add_epi64(s1, _mm256_load_si256((const __m256i *)(b + i + 32)));
		s2 = _mm256_add_epi64(s2, _mm256_load_si256((const __m256i *)(b + i + 64)));
		s3 = _mm256_add_epi64(s3, _mm256_load_si256((const __m256i *)(b + i + 96)));
	}
	__m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
	unsigned long long t[4];
	_mm256_storeu_si256((__m256i *)t, s);
	return t[0] + t[1] + t[2] + t[3];
}
