/* kernels_avx512: AVX-512 (F, BW, VL, DQ) versions of the kernels in
 * kernels.h, in exactly the canonical order written there: one 16-lane
 * accumulator per dot product, tails through masked lanes that leave the
 * accumulator untouched, and the halving fold of kern_sum16. The matrix
 * products are here; the other kernels are kernels_simd.h's, on the lane
 * primitives below. Called only when cpu_detect() says CPU_AVX512. */
#include "kernels/kernels.h"
#include "kernels/btile.h"
#include "kernels/hsum.h"
#include "kernels/prefetch.h"

#include <immintrin.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))

AI __mmask16 tail_mask(int n)
{
	return (__mmask16)((1u << n) - 1u);
}

/* 16 weights from element i of a row of type wt (WT_F32, WT_BF16 or
 * WT_F16, a constant where this is inlined), widened exactly (bf16 by a
 * shift, IEEE binary16 by vcvtph2ps). */
AI __m512 widen(__m256i h, const enum wtype wt)
{
	if (wt == WT_F16)
		return _mm512_cvtph_ps(h);
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AI __m512 ld_w(const void *row, size_t i, const enum wtype wt)
{
	if (wt == WT_F32)
		return _mm512_loadu_ps((const float *)row + i);
	return widen(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + i)), wt);
}

/* The same for the lanes of m only (the others zero). */
AI __m512 ld_w_tail(const void *row, size_t i, __mmask16 m, const enum wtype wt)
{
	if (wt == WT_F32)
		return _mm512_maskz_loadu_ps(m, (const float *)row + i);
	return widen(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + i), wt);
}

AI size_t w_size(const enum wtype wt)
{
	return wt == WT_F32 ? 4 : 2;
}

/* Columns k .. k + 15 (high 0) or k + 16 .. k + 31 (high 1) of an
 * interleaved bf16 row, k a multiple of 32: its columns are paired
 * (weights.h), so these are the low or the high halves of its 16 words
 * from k, widened in place. The words are loaded into a register first:
 * GCC would otherwise fold the load into the shift and the mask both, and
 * the decode loop below, reading each line twice, streamed at half speed
 * (docs/performance.md). */
AI __m512 ld_paired(const void *row, int k, int high)
{
	__m512i v = _mm512_loadu_si512((const uint16_t *)row + wmat_il_col(k));
	__asm__("" : "+v"(v));
	if (high)
		return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
	return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

/* acc[i][j] += the RB weight vectors wv[i] times columns k .. k + 15 of
 * the TB inputs xr[j]. */
AI void fma_step(__m512 acc[4][6], const __m512 wv[4], const float *const xr[6], int k,
		 const int RB, const int TB)
{
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {
		__m512 xv = _mm512_loadu_ps(xr[j] + k);
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
			acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
	}
}

/* A matrix in column panels (il 2, weights.h) is multiplied a panel at a
 * time, and each (row, input)'s 16 lanes are carried from one panel to the
 * next: row r's against input t at v[(r - r0) * ld + t]. The first panel
 * starts from zero, the last folds into y, so the bits are those of one
 * pass over the whole row. */
struct carry {
	__m512 *v;
	int ld, r0;
	int first, last;
};

/* A block of RB <= 4 rows by TB <= 6 inputs (constants where this is
 * inlined): RB * TB accumulators (24 of the 32 registers, the 4 rows of
 * weights and one input beside them). wt: the weights' type; each output
 * is the canonical dot of a row and an input of m->x (16 columns a step,
 * the tail through masked lanes), or with a carry (cy, not NULL) a
 * panel's part of it. With interleaved rows
 * (w->il, weights.h) column k of a row is at wr[i] + wmat_il_col(k) (a
 * bf16 row's columns paired), and the four rows of a block are one
 * sequential stream, which asks for each next page (prefetch_page); then
 * cols is a multiple of 64 and there is no tail. (il is not a constant
 * here: a copy of every block for each layout would double the code, and
 * the offset costs a few integer operations per 16 columns.) */
AI void block(const struct kern_mm *m, int r, int t0, const int RB, const int TB,
	      const enum wtype wt, const struct carry *cy)
{
	const struct wmat *w = m->w;
	int cols = w->cols, il = w->il;
	const int step = 16;
	size_t es = w_size(wt);
	__m512 acc[4][6];
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)
		acc[i][j] = cy && !cy->first ? cy->v[(r + i - cy->r0) * cy->ld + t0 + j]
					    : _mm512_setzero_ps();
	const unsigned char *wr[4];
	const float *xr[6];
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
		wr[i] = (const unsigned char *)w->data + es * wmat_row_at(r + i, cols, il);
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)
		xr[j] = m->x + (size_t)(t0 + j) * (size_t)m->ldx;
	size_t ahead = prefetch_ahead(es * (size_t)RB * (size_t)cols);
	int k = 0;
	if (wt == WT_BF16 && il) {
		/* paired columns, a row's WMAT_IL_COLS at a time (the block's
		 * rows one stream: one page check per chunk, on the first
		 * row's): the 64 bytes at column c of a chunk give columns
		 * c .. c + 15, then c + 16 .. c + 31 */
		for (; k < cols; k += WMAT_IL_COLS) {
			size_t at = es * wmat_il_col(k);
			prefetch_page(wr[0] + at, es * 4 * WMAT_IL_COLS);
			_Pragma("GCC unroll 2") for (int c = 0; c < WMAT_IL_COLS; c += 32)
			_Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
				__m512 wv[4];
				_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
					wv[i] = ld_paired(wr[i] + at, c, h);
				fma_step(acc, wv, xr, k + c + 16 * h, RB, TB);
			}
		}
	}
	for (; k + step <= cols; k += step) {
		size_t o = il ? wmat_il_col(k) : (size_t)k;
		if (!il && (k * es) % 64 == 0)
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				prefetch_at(wr[i] + es * o, ahead);
		if (il && k % WMAT_IL_COLS == 0)
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				prefetch_page(wr[i] + es * o, es * WMAT_IL_COLS);
		__m512 wv[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
			wv[i] = ld_w(wr[i], o, wt);
		fma_step(acc, wv, xr, k, RB, TB);
	}
	if (k < cols) {
		__mmask16 mk = tail_mask(cols - k);
		__m512 wv[4];
		_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
			wv[i] = ld_w_tail(wr[i], (size_t)k, mk, wt);
		_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {
			__m512 xv = _mm512_maskz_loadu_ps(mk, xr[j] + k);
			_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
				acc[i][j] = _mm512_mask3_fmadd_ps(wv[i], xv, acc[i][j], mk);
		}
	}
	_Pragma("GCC unroll 4") for (int i = 0; i < RB; i++)
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {
		if (cy && !cy->last)
			cy->v[(r + i - cy->r0) * cy->ld + t0 + j] = acc[i][j];
		else
			m->y[(size_t)(t0 + j) * m->ldy + r + i] = hsum_512(acc[i][j]);
	}
}

/* Rows r .. r + RB - 1 (RB a constant where this is inlined) times the T
 * inputs (T is m->T, passed to be a constant where it is known): 6 at a
 * time, then the rest in one block. */
AI void row_block(const struct kern_mm *m, int T, int r, const int RB, const enum wtype wt,
		  const struct carry *cy)
{
	int t = 0;
	for (; t + 6 <= T; t += 6)
		block(m, r, t, RB, 6, wt, cy);
	switch (T - t) {
	case 5: block(m, r, t, RB, 5, wt, cy); break;
	case 4: block(m, r, t, RB, 4, wt, cy); break;
	case 3: block(m, r, t, RB, 3, wt, cy); break;
	case 2: block(m, r, t, RB, 2, wt, cy); break;
	case 1: block(m, r, t, RB, 1, wt, cy); break;
	}
}

/* Rows in blocks of 4 (W rows stay in cache across the inputs), leftover
 * rows one at a time. Interleaved rows go in whole blocks of 4 from a
 * multiple of 4 (the rows before it one at a time), so that a block is one
 * stream. */
AI void rows(const struct kern_mm *m, int T, const enum wtype wt, const struct carry *cy)
{
	int r = m->r0, r1 = m->r1, il = m->w->il;
	for (; il && r < r1 && r % 4; r++)
		row_block(m, T, r, 1, wt, cy);
	for (; r + 4 <= r1; r += 4)
		row_block(m, T, r, 4, wt, cy);
	for (; r < r1; r++)
		row_block(m, T, r, 1, wt, cy);
}

/* The sums carried between panels: rows go in groups of CARRY_VECS / T
 * (decode: every row at once, so the matrix is one stream). */
#define CARRY_VECS 1024

/* A matrix in column panels (T < PK_MIN_T): each group of rows panel by
 * panel, every panel a matrix of its own (wmat_panel) against its columns
 * of the inputs. */
AI void panel_rows(const struct kern_mm *m, int T, const enum wtype wt)
{
	const struct wmat *w = m->w;
	int np = (w->cols + WMAT_PANEL_COLS - 1) / WMAT_PANEL_COLS, g1;
	int G = CARRY_VECS / T / 4 * 4;
	__m512 v[CARRY_VECS];
	for (int g = m->r0; g < m->r1; g = g1) {
		g1 = m->r1 - g > G ? g + G : m->r1;
		for (int p = 0; p < np; p++) {
			struct wmat pw = wmat_panel(w, p, w_size(wt));
			struct kern_mm pm = *m;
			pm.w = &pw;
			pm.x = m->x + (size_t)p * WMAT_PANEL_COLS;
			pm.r0 = g;
			pm.r1 = g1;
			struct carry cy = { .v = v, .ld = T, .r0 = g, .first = p == 0,
					    .last = p == np - 1 };
			rows(&pm, T, wt, &cy);
		}
	}
}

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

/* Inputs t .. t + tb - 1 (tb <= PK_TOK) against the panel's RB rows (a
 * constant where this is inlined). */
AI void pk_tiles(float *y, int ldy, const float *pk, int cp, int cols, int k0, int k1, int r,
		 const float *x, int ldx, int t, int tb, __m512 *sp, const int RB)
{
	switch (tb) {
	case 3: pk_tile(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, sp, RB, 3); break;
	case 2: pk_tile(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, sp, RB, 2); break;
	default: pk_tile(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, sp, RB, 1); break;
	}
}

/* Rows r .. r + rb - 1, widened into the panel pk, times all T inputs. */
AI void pk_panel(float *y, int ldy, const float *pk, int cp, int cols, int r, int rb,
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
					pk_tiles(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, tb, sp, PK_ROWS);
				else if (rb == 4)
					pk_tiles(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, tb, sp, 4);
				else
					pk_tiles(y, ldy, pk, cp, cols, k0, k1, r, x, ldx, t, tb, sp, 1);
			}
		}
	}
}

/* Row r of w (of type wt, not in panels), widened into dst. */
AI void widen_cols(const struct wmat *w, int r, float *dst, const enum wtype wt)
{
	size_t es = w_size(wt);
	int cols = w->cols, il = w->il, k = 0;
	const unsigned char *src = (const unsigned char *)w->data + es * wmat_row_at(r, cols, il);
	if (wt == WT_BF16 && il)
		for (; k < cols; k += 32) {
			_mm512_storeu_ps(dst + k, ld_paired(src, k, 0));
			_mm512_storeu_ps(dst + k + 16, ld_paired(src, k, 1));
		}
	for (; k + 16 <= cols; k += 16)
		_mm512_storeu_ps(dst + k, ld_w(src, il ? wmat_il_col(k) : (size_t)k, wt));
	if (k < cols)
		_mm512_storeu_ps(dst + k, ld_w_tail(src, (size_t)k, tail_mask(cols - k), wt));
}

/* The same for any w: in panels, each panel's part of the row. */
AI void widen_row(const struct wmat *w, int r, float *dst, const enum wtype wt)
{
	if (w->il != 2) {
		widen_cols(w, r, dst, wt);
		return;
	}
	for (int p = 0; p * WMAT_PANEL_COLS < w->cols; p++) {
		struct wmat pw = wmat_panel(w, p, w_size(wt));
		widen_cols(&pw, r, dst + (size_t)p * WMAT_PANEL_COLS, wt);
	}
}

/* The float-input products of weights of type wt: fewer than PK_MIN_T
 * inputs (decode, drafts) stream the rows through the blocks above (a
 * matrix in column panels panel by panel, panel_rows); more go through
 * panels of widened rows, each row widened once (the panel's columns
 * beyond cols zero). */
AI void products(const struct kern_mm *m, const enum wtype wt)
{
	if (m->T < PK_MIN_T) {
		if (m->w->il == 2)
			panel_rows(m, m->T, wt);
		else
			rows(m, m->T, wt, NULL);
		return;
	}
	const struct wmat *w = m->w;
	int cols = w->cols, r1 = m->r1, cp = (cols + 15) / 16 * 16;
	float pk[PK_ROWS * cp];
	for (int r = m->r0; r < r1;) {
		int rb = r1 - r >= PK_ROWS ? PK_ROWS : r1 - r >= 4 ? 4 : 1;
		for (int i = 0; i < rb; i++)
			widen_row(w, r + i, pk + (size_t)i * cp, wt);
		pk_panel(m->y, m->ldy, pk, cp, cols, r, rb, m->x, m->ldx, m->T);
		r += rb;
	}
}

void kern_mm_f32_avx512(const struct kern_mm *m)
{
	products(m, WT_F32);
}

void kern_mm_bf16_avx512(const struct kern_mm *m)
{
	products(m, WT_BF16);
}

void kern_mm_f16_avx512(const struct kern_mm *m)
{
	products(m, WT_F16);
}

/* ---- bf16 activations: vdpbf16ps on tiles of 64 rows (btile.h) ----
 *
 * Lanes are rows, so each accumulator is 16 finished outputs: per column
 * pair, a tile's four vectors are loaded once and multiplied by the pair
 * of each of up to six inputs, broadcast from memory (24 accumulators, 4
 * vectors of weights). */
#define B16 __attribute__((target("avx512bf16")))

/* The tile at w (its np pairs) times the TB inputs from x, ldx apart (TB a
 * constant where this is inlined); the lanes of mk[v] of vector v go to
 * rows rbase + 16v of y. */
B16 AI void b16_tile(const unsigned char *w, int np, const uint16_t *x, int ldx, float *y,
		     int ldy, int rbase, const __mmask16 mk[4], const int TB)
{
	__m512 acc[4][6];
	_Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)
		acc[v][j] = _mm512_setzero_ps();
	for (int p = 0; p < np; p++, w += 4 * 64) {
		prefetch_page(w, 4 * 64);
		__m512i wv[4];
		_Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)
			wv[v] = _mm512_load_si512(w + 64 * v);
		_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++) {
			int32_t pair;
			memcpy(&pair, x + (size_t)j * ldx + 2 * p, 4);
			__m512i xv = _mm512_set1_epi32(pair);
			_Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)
				acc[v][j] = _mm512_dpbf16_ps(acc[v][j], (__m512bh)wv[v], (__m512bh)xv);
		}
	}
	_Pragma("GCC unroll 6") for (int j = 0; j < TB; j++)
	_Pragma("GCC unroll 4") for (int v = 0; v < 4; v++)
		_mm512_mask_storeu_ps(y + (size_t)j * ldy + rbase + 16 * v, mk[v], acc[v][j]);
}

/* Every tile that holds a row of [r0, r1), six inputs at a time, then
 * the rest at once. Only where kern_has_dpbf16(). */
B16 void kern_mm_b16_dpbf16(const struct kern_mm *m)
{
	const struct wmat *w = m->w;
	int np = btile_pairs(w->cols), ldx = btile_ldx(w->cols), T = m->T, ldy = m->ldy;
	size_t tb = btile_tile_bytes(w->cols);
	for (int rb = m->r0 / BTILE_ROWS * BTILE_ROWS; rb < m->r1; rb += BTILE_ROWS) {
		const unsigned char *tile = (const unsigned char *)w->data +
					    (size_t)(rb / BTILE_ROWS) * tb;
		__mmask16 mk[4];
		for (int v = 0; v < 4; v++) {
			int lo = m->r0 - (rb + 16 * v), hi = m->r1 - (rb + 16 * v);
			lo = lo < 0 ? 0 : lo;
			hi = hi > 16 ? 16 : hi;
			mk[v] = hi > lo ? (__mmask16)((0xffffu >> (16 - hi)) & (0xffffu << lo)) : 0;
		}
		const uint16_t *x = m->xb;
		float *y = m->y;
		int t = 0;
		for (; t + 6 <= T; t += 6)
			b16_tile(tile, np, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy, ldy, rb,
				 mk, 6);
		x += (size_t)t * ldx;
		y += (size_t)t * ldy;
		switch (T - t) {
		case 5: b16_tile(tile, np, x, ldx, y, ldy, rb, mk, 5); break;
		case 4: b16_tile(tile, np, x, ldx, y, ldy, rb, mk, 4); break;
		case 3: b16_tile(tile, np, x, ldx, y, ldy, rb, mk, 3); break;
		case 2: b16_tile(tile, np, x, ldx, y, ldy, rb, mk, 2); break;
		case 1: b16_tile(tile, np, x, ldx, y, ldy, rb, mk, 1); break;
		}
	}
}

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
#define KS_ATT_GROUP ATT_MAXQ
#define KS_FOLD8
AI void v_fold8(float *out, const V a[8], float f)
{
	_mm256_storeu_ps(out, _mm256_mul_ps(hsum_512x8(a), _mm256_set1_ps(f)));
}

#include "kernels/kernels_simd.h"

const struct kernels *const kernels_avx512 = &ks_kernels;
