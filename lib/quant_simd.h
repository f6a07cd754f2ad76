/* quant_simd: the loops of the SIMD int8 / int4 matmul kernels, written once
 * and instantiated by quant_avx2.c and quant_avx512.c (internal to lib/).
 *
 * The including file defines, for its vector width VL:
 *   V                                the float vector type
 *   vzero(), vload(x), vset1(s), vfma(a, b, acc)
 *   q8_step(q, xv, acc)    acc += widen(q[0..VL)) * xv
 *   q8_finish(acc, q, x, nv, n)      the row's sum: acc reduced, plus the
 *                                    columns [nv, n) the vectors left over
 *   q4_block(p, x, acc)    acc += the 32 weights of the int4 block at p
 *                                    times x[0..32)
 *   QUANT_FN(name)                   name with the ISA suffix
 * and includes this file once.
 *
 * Structure: four rows at a time share each load of x, one accumulator per
 * row (four independent FMA chains hide the latency; the widening sets the
 * pace); each row's stream is prefetched QUANT_PREFETCH bytes ahead; the
 * rows left over go one at a time through the same per-row sequence, so a
 * row's result does not depend on the block it fell in, the row range or T.
 */

static inline void prefetch4(const void *a, const void *b, const void *c,
			     const void *d, size_t o)
{
	_mm_prefetch((const char *)a + o + QUANT_PREFETCH, _MM_HINT_T0);
	_mm_prefetch((const char *)b + o + QUANT_PREFETCH, _MM_HINT_T0);
	_mm_prefetch((const char *)c + o + QUANT_PREFETCH, _MM_HINT_T0);
	_mm_prefetch((const char *)d + o + QUANT_PREFETCH, _MM_HINT_T0);
}

void QUANT_FN(q8_matmul)(const struct wmat *w, float *ys, int ldy, int r0, int r1,
			 const float *xs, int ldx, int T)
{
	int n = w->cols, nv = n / VL * VL;
	const int8_t *base = w->data;
	const float *sc = w->scales;
	int r = r0;
	for (; r + 4 <= r1; r += 4) {
		const int8_t *q0 = base + (size_t)r * n, *q1 = q0 + n, *q2 = q1 + n,
			     *q3 = q2 + n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			V a0 = vzero(), a1 = a0, a2 = a0, a3 = a0;
			for (int c = 0; c < nv; c += VL) {
				if ((c & 63) == 0)
					prefetch4(q0, q1, q2, q3, (size_t)c);
				V xv = vload(x + c);
				a0 = q8_step(q0 + c, xv, a0);
				a1 = q8_step(q1 + c, xv, a1);
				a2 = q8_step(q2 + c, xv, a2);
				a3 = q8_step(q3 + c, xv, a3);
			}
			y[r] = q8_finish(a0, q0, x, nv, n) * sc[r];
			y[r + 1] = q8_finish(a1, q1, x, nv, n) * sc[r + 1];
			y[r + 2] = q8_finish(a2, q2, x, nv, n) * sc[r + 2];
			y[r + 3] = q8_finish(a3, q3, x, nv, n) * sc[r + 3];
		}
	}
	for (; r < r1; r++) {
		const int8_t *q0 = base + (size_t)r * n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			V a0 = vzero();
			for (int c = 0; c < nv; c += VL)
				a0 = q8_step(q0 + c, vload(x + c), a0);
			ys[(size_t)t * ldy + r] = q8_finish(a0, q0, x, nv, n) * sc[r];
		}
	}
}

void QUANT_FN(q4_matmul)(const struct wmat *w, float *ys, int ldy, int r0, int r1,
			 const float *xs, int ldx, int T)
{
	int n = w->cols, G = w->group_size, ng = n / G;
	size_t rb = (size_t)n / 2;  /* bytes per row */
	const uint8_t *base = w->data;
	int r = r0;
	for (; r + 4 <= r1; r += 4) {
		const uint8_t *q0 = base + (size_t)r * rb, *q1 = q0 + rb, *q2 = q1 + rb,
			      *q3 = q2 + rb;
		const float *s0 = w->scales + (size_t)r * ng, *s1 = s0 + ng,
			    *s2 = s1 + ng, *s3 = s2 + ng;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			V a0 = vzero(), a1 = a0, a2 = a0, a3 = a0;
			for (int g = 0; g < ng; g++) {
				V g0 = vzero(), g1 = g0, g2 = g0, g3 = g0;
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK) {
					size_t o = (size_t)c / 2;
					if ((o & 63) == 0)
						prefetch4(q0, q1, q2, q3, o);
					g0 = q4_block(q0 + o, x + c, g0);
					g1 = q4_block(q1 + o, x + c, g1);
					g2 = q4_block(q2 + o, x + c, g2);
					g3 = q4_block(q3 + o, x + c, g3);
				}
				a0 = vfma(g0, vset1(s0[g]), a0);
				a1 = vfma(g1, vset1(s1[g]), a1);
				a2 = vfma(g2, vset1(s2[g]), a2);
				a3 = vfma(g3, vset1(s3[g]), a3);
			}
			y[r] = vreduce(a0);
			y[r + 1] = vreduce(a1);
			y[r + 2] = vreduce(a2);
			y[r + 3] = vreduce(a3);
		}
	}
	for (; r < r1; r++) {
		const uint8_t *q0 = base + (size_t)r * rb;
		const float *s0 = w->scales + (size_t)r * ng;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			V a0 = vzero();
			for (int g = 0; g < ng; g++) {
				V g0 = vzero();
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK)
					g0 = q4_block(q0 + c / 2, x + c, g0);
				a0 = vfma(g0, vset1(s0[g]), a0);
			}
			ys[(size_t)t * ldy + r] = vreduce(a0);
		}
	}
}
