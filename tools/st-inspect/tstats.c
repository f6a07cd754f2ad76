/* tstats: see tstats.h. */
#include "tstats.h"
#include "core/bf16.h"

#include <math.h>
#include <string.h>

/* The 8-bit floats (sign, exponent, mantissa): E4M3 is OCP's E4M3FN (bias
 * 7, no infinities, NaN S.1111.111), E5M2 IEEE-like (bias 15), E8M0 an
 * unsigned exponent (2^(b - 127), NaN 0xff). */
static double f8_e4m3(uint8_t b)
{
	int e = (b >> 3) & 15, m = b & 7;
	if (e == 15 && m == 7)
		return NAN;
	double v = e ? ldexp(8 + m, e - 10) : ldexp(m, -9);
	return b & 0x80 ? -v : v;
}

static double f8_e5m2(uint8_t b)
{
	int e = (b >> 2) & 31, m = b & 3;
	double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(4 + m, e - 17) : ldexp(m, -16);
	return b & 0x80 ? -v : v;
}

/* F4 (E2M1, bias 1, no infinities or NaN): 0, 0.5, 1, 1.5, 2, 3, 4, 6. */
static double f4_e2m1(unsigned n)
{
	int e = (n >> 1) & 3, m = n & 1;
	double v = e ? ldexp(2 + m, e - 2) : 0.5 * m;
	return n & 8 ? -v : v;
}

int tstats_decodes(enum st_dtype t)
{
	return t != ST_F6_E2M3 && t != ST_F6_E3M2 && t != ST_C64 && (unsigned)t < ST_NDTYPES;
}

double tstats_value(const void *data, enum st_dtype t, uint64_t i)
{
	if (t == ST_F4) {
		uint8_t b = ((const uint8_t *)data)[i / 2];
		return f4_e2m1(i % 2 ? b >> 4 : b & 15);
	}
	if (!tstats_decodes(t))
		return NAN;
	const unsigned char *p = (const unsigned char *)data + i * st_dtype_size(t);
	union {
		double f64; float f32; uint16_t u16; int64_t i64; int32_t i32;
		int16_t i16; int8_t i8; uint8_t u8; uint64_t u64; uint32_t u32;
	} v;
	memcpy(&v, p, st_dtype_size(t));
	switch (t) {
	case ST_F64: return v.f64;
	case ST_F32: return v.f32;
	case ST_F16: return f16_to_f32(v.u16);
	case ST_BF16: return bf16_to_f32(v.u16);
	case ST_I64: return (double)v.i64;
	case ST_I32: return v.i32;
	case ST_I16: return v.i16;
	case ST_I8: return v.i8;
	case ST_U64: return (double)v.u64;
	case ST_U32: return v.u32;
	case ST_U16: return v.u16;
	case ST_F8_E4M3: return f8_e4m3(v.u8);
	case ST_F8_E5M2: return f8_e5m2(v.u8);
	case ST_F8_E8M0: return v.u8 == 0xff ? NAN : ldexp(1, v.u8 - 127);
	case ST_U8:
	case ST_BOOL: return v.u8;
	default: return NAN;
	}
}

/* One value into the running statistics. */
static inline void add(struct tstats *s, double *sum, double *sum_abs, double x)
{
	if (isnan(x)) {
		s->n_nan++;
		return;
	}
	if (isinf(x)) {
		s->n_inf++;
		return;
	}
	if (s->n_finite == 0 || x < s->min)
		s->min = x;
	if (s->n_finite == 0 || x > s->max)
		s->max = x;
	s->n_finite++;
	*sum += x;
	*sum_abs += fabs(x);
}

void tstats_compute(struct tstats *s, const void *data, enum st_dtype t, uint64_t n)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	s->decoded = tstats_decodes(t);
	if (!s->decoded)
		return;
	double sum = 0, sum_abs = 0;
	const unsigned char *p = data;
	/* The dtypes of real weights get their own loop (the per-element
	 * dispatch of tstats_value costs about 10x on a 1 GB file). */
	switch (t) {
	case ST_BF16:
		for (uint64_t i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * i, 2);
			add(s, &sum, &sum_abs, bf16_to_f32(h));
		}
		break;
	case ST_F32:
		for (uint64_t i = 0; i < n; i++) {
			float f;
			memcpy(&f, p + 4 * i, 4);
			add(s, &sum, &sum_abs, f);
		}
		break;
	default:
		for (uint64_t i = 0; i < n; i++)
			add(s, &sum, &sum_abs, tstats_value(data, t, i));
	}
	if (s->n_finite) {
		s->mean = sum / (double)s->n_finite;
		s->mean_abs = sum_abs / (double)s->n_finite;
	}
}
