/* cpu: see cpu.h. */
#define _GNU_SOURCE
#include "core/cpu.h"

#include <cpuid.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

static enum cpu_level detect(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return CPU_SCALAR;
	int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1,
	    f16c = (c >> 29) & 1;
	if (!osxsave || !avx)
		return CPU_SCALAR;
	uint64_t xcr0 = xgetbv0();
	if ((xcr0 & 6) != 6)   /* XMM and YMM state */
		return CPU_SCALAR;
	if (__get_cpuid_max(0, NULL) < 7)
		return CPU_SCALAR;
	__cpuid_count(7, 0, a, b, c, d);
	int avx2 = (b >> 5) & 1;
	int avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) &&  /* F, DQ */
		     ((b >> 30) & 1) && ((b >> 31) & 1);    /* BW, VL */
	if (!(avx2 && fma && f16c))
		return CPU_SCALAR;
	if (avx512 && (xcr0 & 0xe0) == 0xe0)  /* opmask, ZMM_Hi256, Hi16_ZMM */
		return CPU_AVX512;
	return CPU_AVX2;
}

enum cpu_level cpu_detect(void)
{
	static int cached = -1;
	if (cached < 0)
		cached = detect();
	return (enum cpu_level)cached;
}

enum cpu_level cpu_level_env(int *bad_env)
{
	enum cpu_level l = cpu_detect(), cap = l;
	const char *s = getenv("QWENPIPE_SIMD");
	if (bad_env)
		*bad_env = 0;
	if (s && *s) {
		if (!strcmp(s, "scalar") || !strcmp(s, "off"))
			cap = CPU_SCALAR;
		else if (!strcmp(s, "avx2"))
			cap = CPU_AVX2;
		else if (!strcmp(s, "avx512"))
			cap = CPU_AVX512;
		else if (bad_env)
			*bad_env = 1;
	}
	return cap < l ? cap : l;
}

const char *cpu_level_name(enum cpu_level l)
{
	static const char *names[] = { "scalar", "avx2", "avx512" };
	return names[l];
}

int cpu_cores(void)
{
	cpu_set_t set;
	int n = 1;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	unsigned a, b, c, d;
	/* CPUID leaf 0xb, level 0: logical processors per core. */
	if (__get_cpuid_max(0, NULL) >= 0xb) {
		__cpuid_count(0xb, 0, a, b, c, d);
		int smt = (int)(b & 0xffff);
		if (((c >> 8) & 0xff) == 1 && smt > 1)
			n /= smt;
	}
	return n > 0 ? n : 1;
}

int cpu_amd_family(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return 0;
	char v[12];
	memcpy(v, &b, 4);
	memcpy(v + 4, &d, 4);
	memcpy(v + 8, &c, 4);
	if (memcmp(v, "AuthenticAMD", 12) != 0 || !__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	/* The base family, plus the extended family where the base is 15. */
	int family = (int)(a >> 8 & 15);
	return family == 15 ? family + (int)(a >> 20 & 255) : family;
}
