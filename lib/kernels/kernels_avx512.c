/* kernels_avx512: AVX-512 (F, BW, VL, DQ) versions of the kernels in
 * kernels.h, in exactly the canonical order written there: one 16-lane
 * accumulator per dot product, tails through masked lanes that leave the
 * accumulator untouched, and the halving fold of kern_sum16. The matrix
 * products are here; the other kernels are kernels_simd.h's, on the lane
 * primitives below. Called only when cpu_detect() says CPU_AVX512. */
#include "kernels/kernels.h"
#include "kernels/hsum.h"
#include "kernels/prefetch.h"

#include <immintrin.h>

#define AI static inline __attribute__((always_inline))

AI __mmask16 tail_mask(int n)
{
	return (__mmask16)((1u << n) - 1u);
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

/* IEEE binary16, widened exactly by vcvtph2ps. */
AI __m512 ld_f16(const uint16_t *p)
{
	return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

AI __m512 ld_f16_tail(const uint16_t *p, __mmask16 m)
{
	return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

/* A block of RB <= 4 rows by TB <= 6 inputs: RB * TB accumulators (24 of the
 * 32 registers, the 4 rows of weights and one input beside them). il: the
 * rows are interleaved (weights.h), so column k of a row is at wr[i] +
 * wmat_il_col(k), and the four rows of a block are one sequential stream;
 * then cols is a multiple of 64 and there is no tail. (il is not a
 * constant here: a copy of every block for each layout would double the
 * code, and the offset costs a few integer operations per 16 columns.) */
#define MATMUL_BLOCK(NAME, WT, LD, LD_TAIL)                                   \
AI void NAME(float *y, int ldy, const WT *w, int cols, int r,                 \
	     const float *x, int ldx, int t0, const int RB, const int TB,      \
	     int il)                                                          \
{                                                                             \
	__m512 acc[4][6];                                                     \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)                  \
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)                  \
		acc[i][j] = _mm512_setzero_ps();                              \
	const WT *wr[4];                                                      \
	const float *xr[6];                                                   \
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)                  \
		wr[i] = w + wmat_row_at(r + i, cols, il);                     \
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)                  \
		xr[j] = x + (size_t)(t0 + j) * ldx;                           \
	size_t ahead = prefetch_ahead(sizeof(WT) * (size_t)RB * (size_t)cols); \
	int k = 0;                                                            \
	for (; k + 16 <= cols; k += 16) {                                     \
		size_t o = il ? wmat_il_col(k) : (size_t)k;                   \
		if (!il && (k * sizeof(WT)) % 64 == 0)                        \
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) \
				prefetch_at(wr[i] + o, ahead);                \
		__m512 wv[4];                                                 \
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)          \
			wv[i] = LD(wr[i] + o);                                \
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
		y[(size_t)(t0 + j) * ldy + r + i] = hsum_512(acc[i][j]);          \
}

/* Rows in blocks of 4 (W rows stay in cache across the inputs), inputs in
 * blocks of 6; leftover rows one at a time. */
#define MATMUL_ROWS(BLOCK, RB, IL)                                            \
	do {                                                                  \
		int t = 0;                                                    \
		for (; t + 6 <= T; t += 6)                                    \
			BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 6, IL);      \
		switch (T - t) {                                              \
		case 5: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 5, IL); break; \
		case 4: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 4, IL); break; \
		case 3: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 3, IL); break; \
		case 2: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 2, IL); break; \
		case 1: BLOCK(y, ldy, w, cols, r, x, ldx, t, RB, 1, IL); break; \
		}                                                             \
	} while (0)

/* Interleaved rows go in whole blocks of 4 from a multiple of 4 (the
 * rows before it one at a time), so that a block is one stream. */
#define MATMUL(NAME, BLOCK, WT, XT, ATTR)                                     \
ATTR void NAME(float *y, int ldy, const WT *w, int cols, int il, int r0,      \
	       int r1, const XT *x, int ldx, int T)                           \
{                                                                             \
	int r = r0;                                                           \
	for (; il && r < r1 && r % 4; r++)                                    \
		MATMUL_ROWS(BLOCK, 1, il);                                    \
	for (; r + 4 <= r1; r += 4)                                           \
		MATMUL_ROWS(BLOCK, 4, il);                                    \
	for (; r < r1; r++)                                                   \
		MATMUL_ROWS(BLOCK, 1, il);                                    \
}

MATMUL_BLOCK(block_f32, float, ld_f32, ld_f32_tail)
MATMUL_BLOCK(block_bf16, uint16_t, ld_bf16, ld_bf16_tail)
MATMUL(rows_f32, block_f32, float, float, static)
MATMUL_BLOCK(block_f16, uint16_t, ld_f16, ld_f16_tail)
MATMUL(rows_bf16, block_bf16, uint16_t, float, static)
MATMUL(rows_f16, block_f16, uint16_t, float, static)

/* ---- several inputs at once (prefill): panels of widened rows ----
 *
 * With T >= PK_MIN_T every weight is used T times, so it pays to widen it
 * once (below that, a batch of drafts or a short prompt, the pass that
 * widens could not keep the memory busy and the row blocks above are
 * faster; docs/performance.md):
 * PK_ROWS rows at a time are widened (copied, for float32) into a panel of
 * float32 on the stack, and tiles of PK_ROWS rows by PK_TOK inputs (24
 * accumulators) run over it with nothing but loads and fmas. The panel
 * stays in L1 while the inputs stream from L2; a panel wider than PK_WIDE
 * columns is taken PK_COLS columns at a time, its accumulators kept in
 * memory between the passes, so that the part in use stays in L1. Inputs
 * go in groups of PK_GROUP, whose accumulators fit in spill[]. Each lane
 * still takes its columns in increasing order from +0, the tail through
 * masked lanes and the fold of kern_sum16 (eight accumulators folded
 * together, the same additions), so the bits are those of the kernels
 * above for any T. */
#define PK_ROWS 8
#define PK_TOK 3
#define PK_WIDE 1024
#define PK_COLS 512
#define PK_GROUP 48
#define PK_MIN_T 16

/* Columns [k0, k1) of the panel's RB rows (pk, cp apart) against inputs
 * t0 .. t0 + TB - 1 (RB, TB constants where this is inlined). The sums
 * start from spill (zero when k0 is 0); after the last columns they are
 * folded into y, otherwise put back into spill. */
AI void pk_tile(float *y, int ldy, const float *pk, int cp, int cols, int k0, int k1,
		int r, const float *x, int ldx, int t0, __m512 *spill, const int RB,
		const int TB)
{
	__m512 acc[PK_ROWS][PK_TOK];
	_Pragma("GCC unroll 8") for (int i = 0; i < RB; i++)
	_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++)
		acc[i][j] = k0 ? spill[i * PK_TOK + j] : _mm512_setzero_ps();
	const float *xr[PK_TOK];
	_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++)
		xr[j] = x + (size_t)(t0 + j) * ldx;
	int k = k0;
	for (; k + 16 <= k1; k += 16) {
		__m512 xv[PK_TOK];
		_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++)
			xv[j] = _mm512_loadu_ps(xr[j] + k);
		_Pragma("GCC unroll 8") for (int i = 0; i < RB; i++) {
			__m512 wv = _mm512_loadu_ps(pk + (size_t)i * cp + k);
			/* in a register: GCC would otherwise fold the load into
			 * each of the TB fmas and load it TB times */
			__asm__("" : "+v"(wv));
			_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++)
				acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
		}
	}
	if (k < k1) {
		__mmask16 m = tail_mask(k1 - k);
		__m512 xv[PK_TOK];
		_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++)
			xv[j] = _mm512_maskz_loadu_ps(m, xr[j] + k);
		_Pragma("GCC unroll 8") for (int i = 0; i < RB; i++) {
			__m512 wv = _mm512_loadu_ps(pk + (size_t)i * cp + k);
			_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++)
				acc[i][j] = _mm512_mask3_fmadd_ps(wv, xv[j], acc[i][j], m);
		}
	}
	if (k1 < cols) {
		_Pragma("GCC unroll 8") for (int i = 0; i < RB; i++)
		_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++)
			spill[i * PK_TOK + j] = acc[i][j];
		return;
	}
	_Pragma("GCC unroll 3") for (int j = 0; j < TB; j++) {
		float *yt = y + (size_t)(t0 + j) * ldy + r;
		if (RB == PK_ROWS) {
			__m512 col[PK_ROWS];
			_Pragma("GCC unroll 8") for (int i = 0; i < PK_ROWS; i++)
				col[i] = acc[i][j];
			_mm256_storeu_ps(yt, hsum_512x8(col));
			continue;
		}
		_Pragma("GCC unroll 8") for (int i = 0; i < RB; i++)
			yt[i] = hsum_512(acc[i][j]);
	}
}

#define PK_TILES(RB)                                                          \
	switch (tb) {                                                         \
	case 3: pk_tile(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, sp, RB, 3); break; \
	case 2: pk_tile(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, sp, RB, 2); break; \
	default: pk_tile(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, sp, RB, 1); break; \
	}

/* Rows r .. r + rb - 1, widened into the panel pk, times all T inputs. */
static void pk_panel(float *y, int ldy, const float *pk, int cp, int cols, int r, int rb,
		     const float *x, int ldx, int T)
{
	__m512 spill[PK_GROUP * PK_ROWS];
	int kc = cols > PK_WIDE ? PK_COLS : cols;
	for (int tg = 0; tg < T; tg += PK_GROUP) {
		int te = T - tg < PK_GROUP ? T : tg + PK_GROUP;
		for (int k0 = 0; k0 < cols; k0 += kc) {
			int k1 = cols - k0 < kc ? cols : k0 + kc;
			for (int t = tg; t < te; t += PK_TOK) {
				int tb = te - t < PK_TOK ? te - t : PK_TOK;
				__m512 *sp = spill + (size_t)(t - tg) * PK_ROWS;
				if (rb == PK_ROWS)
					PK_TILES(PK_ROWS)
				else if (rb == 4)
					PK_TILES(4)
				else
					PK_TILES(1)
			}
		}
	}
}

/* matmul_f32 / bf16 / f16: fewer than PK_MIN_T inputs (decode, drafts)
 * stream the rows through the blocks above; more go through panels, each row widened by LD
 * once (the panel's columns beyond cols zero). */
#define MATMUL_PANELS(NAME, ROWS, WT, LD, LD_TAIL)                            \
static void NAME(float *y, int ldy, const WT *w, int cols, int il, int r0,    \
		 int r1, const float *x, int ldx, int T)                      \
{                                                                             \
	if (T < PK_MIN_T) {                                                   \
		ROWS(y, ldy, w, cols, il, r0, r1, x, ldx, T);                 \
		return;                                                       \
	}                                                                     \
	int cp = (cols + 15) / 16 * 16;                                       \
	float pk[PK_ROWS * cp];                                               \
	for (int r = r0; r < r1;) {                                           \
		int rb = r1 - r >= PK_ROWS ? PK_ROWS : r1 - r >= 4 ? 4 : 1;    \
		for (int i = 0; i < rb; i++) {                                \
			const WT *src = w + wmat_row_at(r + i, cols, il);     \
			float *dst = pk + (size_t)i * cp;                     \
			int k = 0;                                            \
			for (; k + 16 <= cols; k += 16)                       \
				_mm512_storeu_ps(dst + k, LD(src + (il ? wmat_il_col(k) : (size_t)k))); \
			if (k < cols)                                         \
				_mm512_storeu_ps(dst + k, LD_TAIL(src + k, tail_mask(cols - k))); \
		}                                                             \
		pk_panel(y, ldy, pk, cp, cols, r, rb, x, ldx, T);             \
		r += rb;                                                      \
	}                                                                     \
}

MATMUL_PANELS(matmul_f32, rows_f32, float, ld_f32, ld_f32_tail)
MATMUL_PANELS(matmul_bf16, rows_bf16, uint16_t, ld_bf16, ld_bf16_tail)
MATMUL_PANELS(matmul_f16, rows_f16, uint16_t, ld_f16, ld_f16_tail)

/* bf16 activations (dot_b16 in kernels.h) with vdpbf16ps: 32 columns per
 * step, lane j of the accumulator taking the pair 2j + 1, 2j of them, as
 * dot_b16 says; the last cols % 32 columns as zero pairs (masked loads).
 * Blocks as above: RB * TB accumulators, the rows of weights loaded once
 * per step for all TB inputs. Only where kern_has_dpbf16(). */
#define DPBF16 __attribute__((target("avx512bf16")))

DPBF16 AI __m512 dp_step(__m512 acc, __m512i w, __m512i x)
{
	return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)x);
}

DPBF16 AI void block_b16(float *y, int ldy, const uint16_t *w, int cols, int r,
			 const uint16_t *x, int ldx, int t0, const int RB, const int TB,
			 int il)
{
	__m512 acc[4][6];
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)
		acc[i][j] = _mm512_setzero_ps();
	const uint16_t *wr[4], *xr[6];
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
		wr[i] = w + wmat_row_at(r + i, cols, il);
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)
		xr[j] = x + (size_t)(t0 + j) * ldx;
	size_t ahead = prefetch_ahead(2 * (size_t)RB * (size_t)cols);
	int k = 0;
	for (; k + 32 <= cols; k += 32) {
		size_t o = il ? wmat_il_col(k) : (size_t)k;
		__m512i wv[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++) {
			if (!il)
				prefetch_at(wr[i] + o, ahead);
			wv[i] = _mm512_loadu_si512(wr[i] + o);
		}
		_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {
			__m512i xv = _mm512_loadu_si512(xr[j] + k);
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				acc[i][j] = dp_step(acc[i][j], wv[i], xv);
		}
	}
	if (k < cols) {
		__mmask32 m = (__mmask32)((1ull << (cols - k)) - 1);
		__m512i wv[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
			wv[i] = _mm512_maskz_loadu_epi16(m, wr[i] + k);
		_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {
			__m512i xv = _mm512_maskz_loadu_epi16(m, xr[j] + k);
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				acc[i][j] = dp_step(acc[i][j], wv[i], xv);
		}
	}
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)
		y[(size_t)(t0 + j) * ldy + r + i] = hsum_512(acc[i][j]);
}

MATMUL(matmul_b16_dpbf16, block_b16, uint16_t, uint16_t, DPBF16 static)

/* The lane primitives of kernels_simd.h: the 16 lanes in one zmm, tails
 * through masks. */
#define V __m512
AI V v_zero(void) { return _mm512_setzero_ps(); }
AI V v_set1(float f) { return _mm512_set1_ps(f); }
AI V v_load(const float *p) { return _mm512_loadu_ps(p); }
AI V v_loadn(const float *p, int n) { return _mm512_maskz_loadu_ps(tail_mask(n), p); }
AI void v_store(float *p, V v) { _mm512_storeu_ps(p, v); }
AI void v_storen(float *p, V v, int n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }
AI V v_keep(V old, V new, int n) { return _mm512_mask_mov_ps(old, tail_mask(n), new); }
AI V v_add(V a, V b) { return _mm512_add_ps(a, b); }
AI V v_sub(V a, V b) { return _mm512_sub_ps(a, b); }
AI V v_mul(V a, V b) { return _mm512_mul_ps(a, b); }
AI V v_div(V a, V b) { return _mm512_div_ps(a, b); }
AI V v_min(V a, V b) { return _mm512_min_ps(a, b); }
AI V v_max(V a, V b) { return _mm512_max_ps(a, b); }
AI V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
AI V v_neg(V a)
{
	return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a),
						    _mm512_set1_epi32((int)0x80000000u)));
}
AI V v_rint(V a)
{
	return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
AI V v_pow2i(V n)
{
	return _mm512_castsi512_ps(_mm512_slli_epi32(
		_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
AI float v_fold(V v) { return hsum_512(v); }
AI float v_hmax(V v) { return _mm512_reduce_max_ps(v); }

#include "kernels/kernels_simd.h"

#define AVX512_TABLE(B16)                                                     \
	{ .level = CPU_AVX512, .matmul_f32 = matmul_f32, .matmul_bf16 = matmul_bf16, \
	  .matmul_f16 = matmul_f16, .matmul_b16 = B16, .dot = dot,               \
	  .rmsnorm = rmsnorm, .softmax = softmax, .rope = rope,                 \
	  .silu_mul = silu_mul, .axpy = axpy }

const struct kernels kernels_avx512 = AVX512_TABLE(kern_matmul_b16_ref),
		     kernels_avx512_dpbf16 = AVX512_TABLE(matmul_b16_dpbf16);
