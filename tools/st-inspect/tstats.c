/* tstats: see tstats.h. */
#include "tstats.h"
#include "core/bf16.h"

#include <math.h>
#include <string.h>

double tstats_value(const void *data, enum st_dtype t, uint64_t i)
{
	const unsigned char *p = (const unsigned char *)data + i * st_dtype_size(t);
	union {
		double f64; float f32; uint16_t u16; int64_t i64; int32_t i32;
		int16_t i16; int8_t i8; uint8_t u8;
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
