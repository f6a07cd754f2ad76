/* kernels_avx2: AVX2 + FMA versions of the kernels in kernels.h, in exactly
 * the canonical order written there: the 16 partial sums of a dot product
 * live in two 8-lane registers (lanes 0-7 and 8-15), the tail (< 16
 * elements) of a matrix product is finished in scalar fmaf on the stored
 * lanes, then the fold of kern_sum16. The matrix products are here; the
 * other kernels are kernels_simd.h's, on the lane primitives below.
 * Called only when cpu_detect() says CPU_AVX2 or better. */
#include "kernels/kernels.h"
#include "kernels/hsum.h"
#include "kernels/prefetch.h"
#include "core/bf16.h"

#include <immintrin.h>

#define AI static inline __attribute__((always_inline))

/* 8 weights from element i of a row of type wt (a constant where this is
 * inlined: WT_F32, WT_BF16 or WT_F16), widened exactly. */
AI __m256 ld_w(const void *row, size_t i, const enum wtype wt)
{
	if (wt == WT_F32)
		return _mm256_loadu_ps((const float *)row + i);
	__m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)row + i));
	if (wt == WT_F16)
		return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Columns k + 8 part .. k + 8 part + 7 (high 0) or 16 columns on (high
 * 1) of an interleaved bf16 row, k a multiple of 32: its columns are paired
 * (weights.h), so these are the low or the high halves of the 8 words from
 * word 8 part of the 32 columns at k, widened in place. */
AI __m256 ld_paired(const void *row, int k, int part, int high)
{
	const uint16_t *p = (const uint16_t *)row + wmat_il_col(k) + 16 * part;
	__m256i v = _mm256_loadu_si256((const __m256i *)p);
	if (high)
		return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xffff0000u)));
	return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

/* Weight i of a row of type wt, widened. */
AI float w_at(const void *row, size_t i, const enum wtype wt)
{
	if (wt == WT_F32)
		return ((const float *)row)[i];
	uint16_t h = ((const uint16_t *)row)[i];
	return wt == WT_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

AI size_t w_size(const enum wtype wt)
{
	return wt == WT_F32 ? 4 : 2;
}

/* Stores the two halves as the 16 partial sums. */
AI void spill(float s[KDOT_LANES], __m256 lo, __m256 hi)
{
	_mm256_storeu_ps(s, lo);
	_mm256_storeu_ps(s + 8, hi);
}

/* Rows r .. r + RB - 1 (RB <= 4, a constant where this is inlined) times
 * input t: 2 * RB accumulators, the 16 partial sums of each in two halves;
 * the tail (< 16 columns, none with interleaved rows) in scalar fmaf on the
 * stored lanes. Interleaved rows as wmat_row_at and wmat_il_col say (a bf16
 * row's columns paired, weights.h). */
AI void block(const struct kern_mm *m, int r, int t, const int RB, const enum wtype wt)
{
	const struct wmat *w = m->w;
	int cols = w->cols, il = w->il;
	size_t es = w_size(wt);
	__m256 lo[4], hi[4];
	const unsigned char *wr[4];
	const float *xr = m->x + (size_t)t * m->ldx;
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {
		lo[i] = hi[i] = _mm256_setzero_ps();
		wr[i] = (const unsigned char *)w->data + es * wmat_row_at(r + i, cols, il);
	}
	size_t ahead = prefetch_ahead(es * (size_t)RB * (size_t)cols);
	int k = 0;
	if (wt == WT_BF16 && il)  /* paired columns: k, then k + 16 */
		for (; k < cols; k += 32) {
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				prefetch_page((const uint16_t *)wr[i] + wmat_il_col(k), 64);
			_Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
				__m256 xl = _mm256_loadu_ps(xr + k + 16 * h),
				       xh = _mm256_loadu_ps(xr + k + 16 * h + 8);
				_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {
					lo[i] = _mm256_fmadd_ps(ld_paired(wr[i], k, 0, h), xl, lo[i]);
					hi[i] = _mm256_fmadd_ps(ld_paired(wr[i], k, 1, h), xh, hi[i]);
				}
			}
		}
	for (; k + 16 <= cols; k += 16) {
		size_t o = il ? wmat_il_col(k) : (size_t)k;
		if (!il && (k * es) % 64 == 0)
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				prefetch_at(wr[i] + es * o, ahead);
		if (il && k % WMAT_IL_COLS == 0)
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				prefetch_page(wr[i] + es * o, es * WMAT_IL_COLS);
		__m256 xl = _mm256_loadu_ps(xr + k), xh = _mm256_loadu_ps(xr + k + 8);
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {
			lo[i] = _mm256_fmadd_ps(ld_w(wr[i], o, wt), xl, lo[i]);
			hi[i] = _mm256_fmadd_ps(ld_w(wr[i], o + 8, wt), xh, hi[i]);
		}
	}
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {
		float s[KDOT_LANES];
		spill(s, lo[i], hi[i]);
		for (int kk = k; kk < cols; kk++)
			s[kk - k] = fmaf(w_at(wr[i], (size_t)kk, wt), xr[kk], s[kk - k]);
		m->y[(size_t)t * m->ldy + r + i] = kern_sum16(s);
	}
}

/* Rows in blocks of 4, every input against a block while it is in cache;
 * interleaved rows in whole blocks from a multiple of 4. */
AI void rows(const struct kern_mm *m, const enum wtype wt)
{
	int r = m->r0, il = m->w->il;
	for (; il && r < m->r1 && r % 4; r++)
		for (int t = 0; t < m->T; t++)
			block(m, r, t, 1, wt);
	for (; r + 4 <= m->r1; r += 4)
		for (int t = 0; t < m->T; t++)
			block(m, r, t, 4, wt);
	for (; r < m->r1; r++)
		for (int t = 0; t < m->T; t++)
			block(m, r, t, 1, wt);
}

/* Column panels (il 2) are the AVX-512 kernels' layout, which a model
 * takes only where those run (model_interleave); a table capped below
 * them reads such a matrix through the reference, ref. */
AI void products(const struct kern_mm *m, const enum wtype wt, kern_mm_fn *ref)
{
	if (m->w->il == 2)
		ref(m);
	else
		rows(m, wt);
}

void kern_mm_f32_avx2(const struct kern_mm *m)
{
	products(m, WT_F32, kern_mm_f32_scalar);
}

void kern_mm_bf16_avx2(const struct kern_mm *m)
{
	products(m, WT_BF16, kern_mm_bf16_scalar);
}

void kern_mm_f16_avx2(const struct kern_mm *m)
{
	products(m, WT_F16, kern_mm_f16_scalar);
}

/* The lane primitives of kernels_simd.h: lanes 0-7 in lo, 8-15 in hi;
 * tails through lane masks made by comparing the lane indices with n. */
typedef struct { __m256 lo, hi; } V;

AI V v_pair(__m256 lo, __m256 hi) { return (V){ lo, hi }; }
AI V v_zero(void) { return v_pair(_mm256_setzero_ps(), _mm256_setzero_ps()); }
AI V v_set1(float f) { return v_pair(_mm256_set1_ps(f), _mm256_set1_ps(f)); }
AI V v_load(const float *p) { return v_pair(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)); }
AI void v_store(float *p, V v)
{
	_mm256_storeu_ps(p, v.lo);
	_mm256_storeu_ps(p + 8, v.hi);
}

/* All ones in the lanes below n, of lanes base .. base + 7. */
AI __m256i lanes_below(int n, int base)
{
	__m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - base), idx);
}
AI V v_loadn(const float *p, int n)
{
	return v_pair(_mm256_maskload_ps(p, lanes_below(n, 0)),
		      _mm256_maskload_ps(p + 8, lanes_below(n, 8)));
}
AI void v_storen(float *p, V v, int n)
{
	_mm256_maskstore_ps(p, lanes_below(n, 0), v.lo);
	_mm256_maskstore_ps(p + 8, lanes_below(n, 8), v.hi);
}
AI V v_keep(V old, V new, int n)
{
	return v_pair(_mm256_blendv_ps(old.lo, new.lo, _mm256_castsi256_ps(lanes_below(n, 0))),
		      _mm256_blendv_ps(old.hi, new.hi, _mm256_castsi256_ps(lanes_below(n, 8))));
}

AI V v_add(V a, V b) { return v_pair(_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)); }
AI V v_sub(V a, V b) { return v_pair(_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)); }
AI V v_mul(V a, V b) { return v_pair(_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)); }
AI V v_div(V a, V b) { return v_pair(_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)); }
AI V v_min(V a, V b) { return v_pair(_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)); }
AI V v_max(V a, V b) { return v_pair(_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)); }
AI V v_fma(V a, V b, V c)
{
	return v_pair(_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi));
}
AI V v_neg(V a)
{
	__m256 sign = _mm256_set1_ps(-0.0f);
	return v_pair(_mm256_xor_ps(a.lo, sign), _mm256_xor_ps(a.hi, sign));
}
AI __m256 rint8(__m256 a)
{
	return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
AI V v_rint(V a) { return v_pair(rint8(a.lo), rint8(a.hi)); }
AI __m256 pow2i8(__m256 n)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(
		_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}
AI V v_pow2i(V n) { return v_pair(pow2i8(n.lo), pow2i8(n.hi)); }
AI float v_fold(V v) { return hsum_256x2(v.lo, v.hi); }
AI float v_hmax(V v)
{
	__m256 m = _mm256_max_ps(v.lo, v.hi);
	__m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

#define KS_ATT_GROUP 4

#include "kernels/kernels_simd.h"

const struct kernels *const kernels_avx2 = &ks_kernels;
