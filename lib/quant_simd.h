/* quant_simd: the loops of the SIMD int8 / int4 matmul kernels, written once
 * and instantiated by quant_avx2.c and quant_avx512.c (internal to lib/).
 *
 * Both follow the canonical order of lib/quant.h exactly (16 partial sums,
 * fmaf, folded in halves), so they are bitwise equal to the scalar
 * reference. The including file defines:
 *   A                        16 float lanes (one zmm, or two ymm)
 *   azero()
 *   q8_step(q, x, acc)       lane j += q[j] * x[j], j < 16 (one fma each)
 *   q4_step(p, x, acc)       the int4 block at p (32 weights) against x[0..32)
 *   ascale(g, s, acc)        lane j: acc[j] = fma(g[j], s, acc[j])
 *   ahalf(acc)               the fold's first halving: 8 lanes s[j] + s[j + 8]
 *                            (quant_fold8 / quant_fold8x4 do the rest)
 *   QUANT_FN(name)           name with the ISA suffix
 * and includes this file once.
 *
 * Structure: four rows at a time share each x (from L1), one accumulator
 * set per row, so four independent FMA chains hide the latency; each row's
 * stream is prefetched QUANT_PREFETCH bytes ahead; the rows left over go one
 * at a time through the same per-row sequence. The last cols % 16 int8
 * columns go through the same step from zero-padded copies (a zero product
 * leaves a partial sum unchanged, so the order is kept).
 */

static inline void prefetch4(const void *a, const void *b, const void *c,
			     const void *d, size_t o)
{
	_mm_prefetch((const char *)a + o + QUANT_PREFETCH, _MM_HINT_T0);
	_mm_prefetch((const char *)b + o + QUANT_PREFETCH, _MM_HINT_T0);
	_mm_prefetch((const char *)c + o + QUANT_PREFETCH, _MM_HINT_T0);
	_mm_prefetch((const char *)d + o + QUANT_PREFETCH, _MM_HINT_T0);
}

/* The lanes of the last 16-wide partial step, from zero-padded copies. */
static inline A q8_tail(const int8_t *q, const float *x, int nv, int n, A acc)
{
	if (n == nv)
		return acc;
	int8_t qt[16] = { 0 };
	float xt[16] = { 0 };
	memcpy(qt, q + nv, (size_t)(n - nv));
	memcpy(xt, x + nv, sizeof(float) * (size_t)(n - nv));
	return q8_step(qt, xt, acc);
}

void QUANT_FN(q8_matmul)(const struct wmat *w, float *ys, int ldy, int r0, int r1,
			 const float *xs, int ldx, int T)
{
	int n = w->cols, nv = n / 16 * 16;
	const int8_t *base = w->data;
	const float *sc = w->scales;
	int r = r0;
	for (; r + 4 <= r1; r += 4) {
		const int8_t *q0 = base + (size_t)r * n, *q1 = q0 + n, *q2 = q1 + n,
			     *q3 = q2 + n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			float *y = ys + (size_t)t * ldy;
			A a0 = azero(), a1 = a0, a2 = a0, a3 = a0;
			for (int c = 0; c < nv; c += 16) {
				if ((c & 63) == 0)
					prefetch4(q0, q1, q2, q3, (size_t)c);
				a0 = q8_step(q0 + c, x + c, a0);
				a1 = q8_step(q1 + c, x + c, a1);
				a2 = q8_step(q2 + c, x + c, a2);
				a3 = q8_step(q3 + c, x + c, a3);
			}
			float s4[4];
			quant_fold8x4(ahalf(q8_tail(q0, x, nv, n, a0)), ahalf(q8_tail(q1, x, nv, n, a1)),
				      ahalf(q8_tail(q2, x, nv, n, a2)), ahalf(q8_tail(q3, x, nv, n, a3)), s4);
			for (int i = 0; i < 4; i++)
				y[r + i] = s4[i] * sc[r + i];
		}
	}
	for (; r < r1; r++) {
		const int8_t *q0 = base + (size_t)r * n;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			A a0 = azero();
			for (int c = 0; c < nv; c += 16)
				a0 = q8_step(q0 + c, x + c, a0);
			ys[(size_t)t * ldy + r] = quant_fold8(ahalf(q8_tail(q0, x, nv, n, a0))) * sc[r];
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
			A a0 = azero(), a1 = a0, a2 = a0, a3 = a0;
			for (int g = 0; g < ng; g++) {
				A g0 = azero(), g1 = g0, g2 = g0, g3 = g0;
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK) {
					size_t o = (size_t)c / 2;
					if ((o & 63) == 0)
						prefetch4(q0, q1, q2, q3, o);
					g0 = q4_step(q0 + o, x + c, g0);
					g1 = q4_step(q1 + o, x + c, g1);
					g2 = q4_step(q2 + o, x + c, g2);
					g3 = q4_step(q3 + o, x + c, g3);
				}
				a0 = ascale(g0, s0[g], a0);
				a1 = ascale(g1, s1[g], a1);
				a2 = ascale(g2, s2[g], a2);
				a3 = ascale(g3, s3[g], a3);
			}
			quant_fold8x4(ahalf(a0), ahalf(a1), ahalf(a2), ahalf(a3), y + r);
		}
	}
	for (; r < r1; r++) {
		const uint8_t *q0 = base + (size_t)r * rb;
		const float *s0 = w->scales + (size_t)r * ng;
		for (int t = 0; t < T; t++) {
			const float *x = xs + (size_t)t * ldx;
			A a0 = azero();
			for (int g = 0; g < ng; g++) {
				A g0 = azero();
				for (int c = g * G; c < (g + 1) * G; c += Q4_BLOCK)
					g0 = q4_step(q0 + c / 2, x + c, g0);
				a0 = ascale(g0, s0[g], a0);
			}
			ys[(size_t)t * ldy + r] = quant_fold8(ahalf(a0));
		}
	}
}
