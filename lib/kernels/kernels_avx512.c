/* kernels_avx512: AVX-512 (F, BW, VL, DQ) versions of the kernels in
 * kernels.h, in exactly the canonical order written there: one 16-lane
 * accumulator per dot product, tails through masked lanes that leave the
 * accumulator untouched, and the halving fold of kern_sum16.
 * Called only when cpu_detect() says CPU_AVX512. */
#include "kernels/kernels.h"
#include "kernels/prefetch.h"

#include <immintrin.h>

#define AI static inline __attribute__((always_inline))

AI __mmask16 tail_mask(int n)
{
	return (__mmask16)((1u << n) - 1u);
}

/* The fold of kern_sum16: s[j] += s[j + w] for w = 8, 4, 2, 1. */
AI float hsum(__m512 v)
{
	__m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
	__m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	__m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
	return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));
}

AI __m512 ld_f32(const float *p)
{
	return _mm512_loadu_ps(p);
}

AI __m512 ld_f32_tail(const float *p, __mmask16 m)
{
	return _mm512_maskz_loadu_ps(m, p);
}

AI __m512 ld_bf16(const uint16_t *p)
{
	__m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

AI __m512 ld_bf16_tail(const uint16_t *p, __mmask16 m)
{
	__m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

/* A block of RB <= 4 rows by TB <= 6 inputs: RB * TB accumulators (24 of the
 * 32 registers, the 4 rows of weights and one input beside them). */
#define MATMUL_BLOCK(NAME, WT, LD, LD_TAIL)                                   \
AI void NAME(float *y, int ldy, const WT *w, int cols, int r,                 \
	     const float *x, int ldx, int t0, const int RB, const int TB)      \
{                                                                             \
	__m512 acc[4][6];                                                     \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)                  \
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)                  \
		acc[i][j] = _mm512_setzero_ps();                              \
	const WT *wr[4];                                                      \
	const float *xr[6];                                                   \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)                  \
		wr[i] = w + (size_t)(r + i) * cols;                           \
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)                  \
		xr[j] = x + (size_t)(t0 + j) * ldx;                           \
	size_t ahead = prefetch_ahead(sizeof(WT) * (size_t)RB * (size_t)cols); \
	int k = 0;                                                            \
	for (; k + 16 <= cols; k += 16) {                                     \
		if ((k * sizeof(WT)) % 64 == 0)                               \
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) \
				prefetch_at(wr[i] + k, ahead);                \
		__m512 wv[4];                                                 \
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)          \
			wv[i] = LD(wr[i] + k);                                \
		_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {        \
			__m512 xv = _mm512_loadu_ps(xr[j] + k);               \
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)  \
				acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]); \
		}                                                             \
	}                                                                     \
	if (k < cols) {                                                       \
		__mmask16 m = tail_mask(cols - k);                            \
		__m512 wv[4];                                                 \
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)          \
			wv[i] = LD_TAIL(wr[i] + k, m);                        \
		_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {        \
			__m512 xv = _mm512_maskz_loadu_ps(m, xr[j] + k);      \
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)  \
				acc[i][j] = _mm512_mask3_fmadd_ps(wv[i], xv, acc[i][j], m); \
		}                                                             \
	}                                                                     \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)                  \
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)                  \
		y[(size_t)(t0 + j) * ldy + r + i] = hsum(acc[i][j]);          \
}

/* Rows in blocks of 4 (W rows stay in cache across the inputs), inputs in
 * blocks of 6; leftover rows one at a time. */
#define MATMUL_ROWS(BLOCK, RB)                                                \
	do {                                                                  \
		int t = 0;                                                    \
		for (; t + 6 <= T; t += 6)                                    \
			BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 6);          \
		switch (T - t) {                                              \
		case 5: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 5); break;   \
		case 4: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 4); break;   \
		case 3: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 3); break;   \
		case 2: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 2); break;   \
		case 1: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 1); break;   \
		}                                                             \
	} while (0)

#define MATMUL(NAME, BLOCK, WT)                                               \
static void NAME(float *y, int ldy, const WT *w, int cols, int r0, int r1,    \
		 const float *x, int ldx, int T)                              \
{                                                                             \
	int r = r0;                                                           \
	for (; r + 4 <= r1; r += 4)                                           \
		MATMUL_ROWS(BLOCK, 4);                                        \
	for (; r < r1; r++)                                                   \
		MATMUL_ROWS(BLOCK, 1);                                        \
}

MATMUL_BLOCK(block_f32, float, ld_f32, ld_f32_tail)
MATMUL_BLOCK(block_bf16, uint16_t, ld_bf16, ld_bf16_tail)
MATMUL(matmul_f32, block_f32, float)
MATMUL(matmul_bf16, block_bf16, uint16_t)

static float dot(const float *a, const float *b, int n)
{
	__m512 acc = _mm512_setzero_ps();
	int i = 0;
	for (; i + 16 <= n; i += 16)
		acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		acc = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i),
					    _mm512_maskz_loadu_ps(m, b + i), acc, m);
	}
	return hsum(acc);
}

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
	float r = 1.0f / sqrtf(dot(x, x, n) / (float)n + eps);
	__m512 rv = _mm512_set1_ps(r);
	int i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(w + i),
				 _mm512_mul_ps(_mm512_loadu_ps(x + i), rv)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		_mm512_mask_storeu_ps(out + i, m,
			_mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i),
				      _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), rv)));
	}
}

/* kexp, lane by lane. */
AI __m512 vexp(__m512 x)
{
	x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(KEXP_HI)),
			  _mm512_set1_ps(KEXP_LO));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(KEXP_LOG2E)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-KEXP_C1), x);
	r = _mm512_fmadd_ps(n, _mm512_set1_ps(-KEXP_C2), r);
	__m512 p = _mm512_set1_ps(KEXP_P0);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KEXP_P1));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KEXP_P2));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KEXP_P3));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KEXP_P4));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(KEXP_P5));
	__m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r),
				 _mm512_set1_ps(1.0f));
	__m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n),
						       _mm512_set1_epi32(127)), 23);
	return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

static void softmax(float *x, int n)
{
	__m512 mv = _mm512_set1_ps(x[0]);
	int i = 0;
	for (; i + 16 <= n; i += 16)
		mv = _mm512_max_ps(mv, _mm512_loadu_ps(x + i));
	if (i < n)
		mv = _mm512_mask_max_ps(mv, tail_mask(n - i), mv,
					_mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
	__m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
	__m512 acc = _mm512_setzero_ps();
	for (i = 0; i + 16 <= n; i += 16) {
		__m512 e = vexp(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
		_mm512_storeu_ps(x + i, e);
		acc = _mm512_add_ps(acc, e);
	}
	if (i < n) {
		__mmask16 t = tail_mask(n - i);
		__m512 e = vexp(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, x + i), m));
		_mm512_mask_storeu_ps(x + i, t, e);
		acc = _mm512_mask_add_ps(acc, t, acc, e);
	}
	__m512 s = _mm512_set1_ps(hsum(acc));
	for (i = 0; i + 16 <= n; i += 16)
		_mm512_storeu_ps(x + i, _mm512_div_ps(_mm512_loadu_ps(x + i), s));
	if (i < n) {
		__mmask16 t = tail_mask(n - i);
		_mm512_mask_storeu_ps(x + i, t,
				      _mm512_div_ps(_mm512_maskz_loadu_ps(t, x + i), s));
	}
}

static void rope(float *x, int n_heads, int head_dim, const float *cos,
		 const float *sin)
{
	int half = head_dim / 2;
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		for (int i = 0; i < half; i += 16) {
			__mmask16 m = tail_mask(half - i < 16 ? half - i : 16);
			__m512 a = _mm512_maskz_loadu_ps(m, v + i);
			__m512 b = _mm512_maskz_loadu_ps(m, v + i + half);
			__m512 c = _mm512_maskz_loadu_ps(m, cos + i);
			__m512 s = _mm512_maskz_loadu_ps(m, sin + i);
			_mm512_mask_storeu_ps(v + i, m, _mm512_sub_ps(_mm512_mul_ps(a, c),
								       _mm512_mul_ps(b, s)));
			_mm512_mask_storeu_ps(v + i + half, m,
					      _mm512_add_ps(_mm512_mul_ps(b, c),
							    _mm512_mul_ps(a, s)));
		}
	}
}

AI __m512 silu_mul16(__m512 g, __m512 u)
{
	__m512 neg = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g),
						  _mm512_set1_epi32((int)0x80000000u)));
	__m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), vexp(neg));
	return _mm512_mul_ps(_mm512_div_ps(g, d), u);
}

static void silu_mul(float *g, const float *u, int n)
{
	int i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(g + i, silu_mul16(_mm512_loadu_ps(g + i),
						   _mm512_loadu_ps(u + i)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		_mm512_mask_storeu_ps(g + i, m,
			silu_mul16(_mm512_maskz_loadu_ps(m, g + i),
				   _mm512_maskz_loadu_ps(m, u + i)));
	}
}

static void axpy(float *y, float a, const float *x, int n)
{
	__m512 av = _mm512_set1_ps(a);
	int i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i),
							_mm512_loadu_ps(y + i)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		_mm512_mask_storeu_ps(y + i, m,
			_mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i),
					_mm512_maskz_loadu_ps(m, y + i)));
	}
}

const struct kernels kernels_avx512 = {
	.level = CPU_AVX512,
	.matmul_f32 = matmul_f32,
	.matmul_bf16 = matmul_bf16,
	.dot = dot,
	.rmsnorm = rmsnorm,
	.softmax = softmax,
	.rope = rope,
	.silu_mul = silu_mul,
	.axpy = axpy,
};
