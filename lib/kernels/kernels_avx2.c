/* kernels_avx2: AVX2 + FMA versions of the kernels in kernels.h, in exactly
 * the canonical order written there: the 16 partial sums of a dot product
 * live in two 8-lane registers (lanes 0-7 and 8-15), the tail (< 16
 * elements) is finished in scalar fmaf on the stored lanes, then the fold
 * of kern_sum16. Called only when cpu_detect() says CPU_AVX2 or better. */
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "core/bf16.h"

#include <immintrin.h>

#define AI static inline __attribute__((always_inline))

AI __m256 ld_f32(const float *p)
{
	return _mm256_loadu_ps(p);
}

AI __m256 ld_bf16(const uint16_t *p)
{
	__m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

AI float wf32(float v)
{
	return v;
}

/* Stores the two halves as the 16 partial sums. */
AI void spill(float s[KDOT_LANES], __m256 lo, __m256 hi)
{
	_mm256_storeu_ps(s, lo);
	_mm256_storeu_ps(s + 8, hi);
}

/* RB rows of w times one input: 2 * RB accumulators. */
#define MATMUL_BLOCK(NAME, WT, LD, WIDEN)                                     \
AI void NAME(float *y, int ldy, const WT *w, int cols, int r,                 \
	     const float *x, int ldx, int t, const int RB)                    \
{                                                                             \
	__m256 lo[4], hi[4];                                                  \
	const WT *wr[4];                                                      \
	const float *xr = x + (size_t)t * ldx;                                \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {                \
		lo[i] = hi[i] = _mm256_setzero_ps();                          \
		wr[i] = w + (size_t)(r + i) * cols;                           \
	}                                                                     \
	size_t ahead = prefetch_ahead(sizeof(WT) * (size_t)RB * (size_t)cols); \
	int k = 0;                                                            \
	for (; k + 16 <= cols; k += 16) {                                     \
		if ((k * sizeof(WT)) % 64 == 0)                               \
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) \
				prefetch_at(wr[i] + k, ahead);                \
		__m256 xl = _mm256_loadu_ps(xr + k), xh = _mm256_loadu_ps(xr + k + 8); \
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {        \
			lo[i] = _mm256_fmadd_ps(LD(wr[i] + k), xl, lo[i]);    \
			hi[i] = _mm256_fmadd_ps(LD(wr[i] + k + 8), xh, hi[i]); \
		}                                                             \
	}                                                                     \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {                \
		float s[KDOT_LANES];                                          \
		spill(s, lo[i], hi[i]);                                       \
		for (int kk = k; kk < cols; kk++)                             \
			s[kk - k] = fmaf(WIDEN(wr[i][kk]), xr[kk], s[kk - k]); \
		y[(size_t)t * ldy + r + i] = kern_sum16(s);                   \
	}                                                                     \
}

/* Rows in blocks of 4, every input against a block while it is in cache. */
#define MATMUL(NAME, BLOCK, WT)                                               \
static void NAME(float *y, int ldy, const WT *w, int cols, int r0, int r1,    \
		 const float *x, int ldx, int T)                              \
{                                                                             \
	int r = r0;                                                           \
	for (; r + 4 <= r1; r += 4)                                           \
		for (int t = 0; t < T; t++)                                   \
			BLOCK(y, ldy, w, cols, r, x, ldx, t, 4);              \
	for (; r < r1; r++)                                                   \
		for (int t = 0; t < T; t++)                                   \
			BLOCK(y, ldy, w, cols, r, x, ldx, t, 1);              \
}

MATMUL_BLOCK(block_f32, float, ld_f32, wf32)
MATMUL_BLOCK(block_bf16, uint16_t, ld_bf16, bf16_to_f32)
MATMUL(matmul_f32, block_f32, float)
MATMUL(matmul_bf16, block_bf16, uint16_t)

static float dot(const float *a, const float *b, int n)
{
	float y;
	block_f32(&y, 0, a, n, 0, b, 0, 0, 1);
	return y;
}

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
	float r = 1.0f / sqrtf(dot(x, x, n) / (float)n + eps);
	__m256 rv = _mm256_set1_ps(r);
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(w + i),
				 _mm256_mul_ps(_mm256_loadu_ps(x + i), rv)));
	for (; i < n; i++)
		out[i] = w[i] * (x[i] * r);
}

/* kexp, lane by lane. */
AI __m256 vexp(__m256 x)
{
	x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(KEXP_HI)),
			  _mm256_set1_ps(KEXP_LO));
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(KEXP_LOG2E)),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-KEXP_C1), x);
	r = _mm256_fmadd_ps(n, _mm256_set1_ps(-KEXP_C2), r);
	__m256 p = _mm256_set1_ps(KEXP_P0);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KEXP_P1));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KEXP_P2));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KEXP_P3));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KEXP_P4));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(KEXP_P5));
	__m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r),
				 _mm256_set1_ps(1.0f));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
						       _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

static void softmax(float *x, int n)
{
	float m = x[0];
	int i = 0;
	if (n >= 8) {
		__m256 mv = _mm256_loadu_ps(x);
		for (i = 8; i + 8 <= n; i += 8)
			mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
		float t[8];
		_mm256_storeu_ps(t, mv);
		for (int j = 0; j < 8; j++)
			m = t[j] > m ? t[j] : m;
	}
	for (; i < n; i++)
		m = x[i] > m ? x[i] : m;
	__m256 mv = _mm256_set1_ps(m);
	__m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
	for (i = 0; i + 16 <= n; i += 16) {
		__m256 a = vexp(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
		__m256 b = vexp(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mv));
		_mm256_storeu_ps(x + i, a);
		_mm256_storeu_ps(x + i + 8, b);
		lo = _mm256_add_ps(lo, a);
		hi = _mm256_add_ps(hi, b);
	}
	float s[KDOT_LANES];
	spill(s, lo, hi);
	for (int j = i; j < n; j++) {
		x[j] = kexp(x[j] - m);
		s[j - i] += x[j];
	}
	float sum = kern_sum16(s);
	__m256 sv = _mm256_set1_ps(sum);
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(x + i, _mm256_div_ps(_mm256_loadu_ps(x + i), sv));
	for (; i < n; i++)
		x[i] = x[i] / sum;
}

static void rope(float *x, int n_heads, int head_dim, const float *cos,
		 const float *sin)
{
	int half = head_dim / 2;
	for (int h = 0; h < n_heads; h++) {
		float *v = x + (size_t)h * head_dim;
		int i = 0;
		for (; i + 8 <= half; i += 8) {
			__m256 a = _mm256_loadu_ps(v + i), b = _mm256_loadu_ps(v + i + half);
			__m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
			_mm256_storeu_ps(v + i, _mm256_sub_ps(_mm256_mul_ps(a, c),
							      _mm256_mul_ps(b, s)));
			_mm256_storeu_ps(v + i + half, _mm256_add_ps(_mm256_mul_ps(b, c),
								     _mm256_mul_ps(a, s)));
		}
		for (; i < half; i++) {
			float a = v[i], b = v[i + half];
			float ac = a * cos[i], bs = b * sin[i];
			float bc = b * cos[i], as = a * sin[i];
			v[i] = ac - bs;
			v[i + half] = bc + as;
		}
	}
}

static void silu_mul(float *g, const float *u, int n)
{
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 gv = _mm256_loadu_ps(g + i);
		__m256 neg = _mm256_xor_ps(gv, _mm256_set1_ps(-0.0f));
		__m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), vexp(neg));
		_mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(gv, d),
						      _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++)
		g[i] = g[i] / (1.0f + kexp(-g[i])) * u[i];
}

static void axpy(float *y, float a, const float *x, int n)
{
	__m256 av = _mm256_set1_ps(a);
	int i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i),
							_mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] = fmaf(a, x[i], y[i]);
}

const struct kernels kernels_avx2 = {
	.level = CPU_AVX2,
	.matmul_f32 = matmul_f32,
	.matmul_bf16 = matmul_bf16,
	.dot = dot,
	.rmsnorm = rmsnorm,
	.softmax = softmax,
	.rope = rope,
	.silu_mul = silu_mul,
	.axpy = axpy,
};
