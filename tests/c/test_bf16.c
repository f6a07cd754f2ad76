/* bf16 and f16 conversions against their closed forms. */
#include "core/bf16.h"

#include <immintrin.h>
#include "check.h"

#include <stdint.h>
#include <string.h>

__attribute__((target("f16c"))) static uint16_t hw_f16(float f)
{
	return (uint16_t)_cvtss_sh(f, 0);  /* 0: round to nearest even */
}

int main(void)
{
	/* bf16 -> f32 -> bf16 is the identity on every bit pattern; NaNs stay
	 * NaN. */
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = bf16_to_f32((uint16_t)h);
		uint16_t back = f32_to_bf16(f);
		if (back != h)
			bad++;
		uint32_t u;
		memcpy(&u, &f, 4);
		if (u != h << 16)  /* widening is a shift, exactly */
			bad++;
	}
	CHECK(bad == 0, "bf16 round trip: %d of 65536 patterns differ", bad);

	/* Narrowing rounds to nearest, ties to even. */
	uint32_t cases[][2] = {
		{ 0x3f808000u, 0x3f80 }, /* tie, even below: down */
		{ 0x3f818000u, 0x3f82 }, /* tie, odd below: up */
		{ 0x3f808001u, 0x3f81 }, /* above the tie: up */
		{ 0x3f807fffu, 0x3f80 }, /* below the tie: down */
		{ 0x7f7fffffu, 0x7f80 }, /* FLT_MAX rounds to infinity */
		{ 0x7f800001u, 0x7fc0 }, /* NaN with a low payload only stays NaN */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		float f;
		memcpy(&f, &cases[i][0], 4);
		uint16_t got = f32_to_bf16(f);
		CHECK(got == cases[i][1], "f32_to_bf16(0x%08x) = 0x%04x, want 0x%04x",
		      cases[i][0], got, cases[i][1]);
	}

	/* f16: closed forms. */
	CHECK(f16_to_f32(0x3c00) == 1.0f, "f16 1.0");
	CHECK(f16_to_f32(0xc000) == -2.0f, "f16 -2.0");
	CHECK(f16_to_f32(0x7bff) == 65504.0f, "f16 max");
	CHECK(f16_to_f32(0x0001) == ldexpf(1, -24), "f16 smallest subnormal");
	CHECK(f16_to_f32(0x03ff) == ldexpf(1023, -24), "f16 largest subnormal");
	CHECK(isinf(f16_to_f32(0x7c00)), "f16 inf");
	CHECK(isnan(f16_to_f32(0x7e00)), "f16 nan");
	CHECK(signbit(f16_to_f32(0x8000)) && f16_to_f32(0x8000) == 0, "f16 -0");

	/* f32 -> f16: the identity on every f16 that is not NaN, and, on every
	 * float in [2^-26, 2^17) with either sign whose low 12 bits are 0x000,
	 * 0x001, 0x7ff, 0x800, 0x801 or 0xfff (the ties and their neighbours,
	 * the subnormal range, the overflow edge), the same half as the CPU's
	 * own conversion (F16C vcvtps2ph, round to nearest even) where there
	 * is one. */
	int f16bad = 0;
	for (uint32_t h = 0; h < 65536; h++)
		if ((h & 0x7c00u) != 0x7c00u || !(h & 0x3ffu))
			f16bad += f32_to_f16(f16_to_f32((uint16_t)h)) != h;
	CHECK(f16bad == 0, "f16 round trip: %d patterns differ", f16bad);
	CHECK(f32_to_f16(65519.996f) == 0x7bff && f32_to_f16(65520.0f) == 0x7c00 &&
	      f32_to_f16(ldexpf(1, -25)) == 0 && f32_to_f16(ldexpf(3, -26)) == 1,
	      "f16 overflow and subnormal edges");
	if (__builtin_cpu_supports("f16c")) {
		static const uint32_t lows[] = { 0x000, 0x001, 0x7ff, 0x800, 0x801, 0xfff };
		int hw = 0;
		for (uint32_t top = 0x32800u; top < 0x48000u; top++)  /* bits 31..12, 2^-26 .. 2^17 */
			for (int k = 0; k < 6; k++)
				for (uint32_t sign = 0; sign < 2; sign++) {
					uint32_t u = sign << 31 | top << 12 | lows[k];
					float f;
					memcpy(&f, &u, 4);
					hw += f32_to_f16(f) != hw_f16(f);
				}
		CHECK(hw == 0, "f32_to_f16 against F16C: %d differ", hw);
	}
	return check_done("test_bf16");
}
