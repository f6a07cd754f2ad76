/* bf16: see bf16.h. */
#include "core/bf16.h"

#include <math.h>

float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;
	uint32_t u;
	if (exp == 0x1f) {                 /* inf or NaN */
		u = sign | 0x7f800000u | (man << 13);
	} else if (exp != 0) {             /* normal */
		u = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man == 0) {             /* zero */
		u = sign;
	} else {                           /* subnormal: normalise */
		exp = 113;
		while (!(man & 0x400u)) {
			man <<= 1;
			exp--;
		}
		u = sign | (exp << 23) | ((man & 0x3ffu) << 13);
	}
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
	uint32_t ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u)                  /* NaN: quiet, top payload kept */
		return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
	if (ax >= 0x477ff000u)                 /* 65520 and up round to infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) {                /* below 2^-14: a multiple of 2^-24 */
		float a;
		memcpy(&a, &ax, 4);
		/* a * 2^24 is exact; lrintf rounds it to nearest even */
		return (uint16_t)(sign | (uint16_t)lrintf(a * 16777216.0f));
	}
	ax += 0xfffu + ((ax >> 13) & 1u);      /* round at bit 13, ties to even */
	return (uint16_t)(sign | ((ax - 0x38000000u) >> 13));
}
