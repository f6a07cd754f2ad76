/* bf16: bfloat16 and IEEE half conversions.
 *
 * bf16 is the top half of an IEEE float32, so widening is a 16-bit shift and
 * exact. Narrowing rounds to nearest, ties to even, and keeps NaNs NaN: the
 * high half of the payload is kept (so bf16 -> f32 -> bf16 is the identity on
 * all 65,536 patterns), and a NaN whose payload lives only in the low half
 * gets the quiet bit rather than turning into infinity.
 */
#ifndef BF16_H
#define BF16_H

#include <stdint.h>
#include <string.h>

static inline float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u) {   /* NaN: keep the high payload */
		uint16_t h = (uint16_t)(u >> 16);
		return (h & 0x7fu) ? h : (uint16_t)(h | 0x40u);
	}
	u += 0x7fffu + ((u >> 16) & 1u);          /* round to nearest even */
	return (uint16_t)(u >> 16);
}

/* IEEE 754 binary16 to float32, exact (subnormals, inf and NaN included). */
float f16_to_f32(uint16_t h);

/* float32 to binary16, rounded to nearest, ties to even (as F16C's
 * vcvtps2ph and ggml do): past 65504 to infinity, below 2^-14 to the
 * subnormals, NaN stays NaN (quiet). */
uint16_t f32_to_f16(float f);

#endif
