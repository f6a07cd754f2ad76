/* bf16: see bf16.h. */
#include "core/bf16.h"

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
