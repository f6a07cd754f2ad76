/* cpu: which SIMD kernels this machine can run.
 *
 * The binary runs on any x86-64; the AVX2 and AVX-512 kernels are compiled
 * into their own files (kernels_avx2.c, kernels_avx512.c) and are only called
 * after cpu_detect() said the processor and the operating system support
 * them (CPUID feature bits plus XGETBV for the saved register state).
 *
 * The environment variable QWENPIPE_SIMD caps the level: "scalar" (or
 * "off"), "avx2", "avx512". It can only lower the level, never raise it
 * past what the machine has; an unknown value is ignored (cpu_level_env
 * tells the caller, which may warn).
 */
#ifndef CPU_H
#define CPU_H

enum cpu_level { CPU_SCALAR = 0, CPU_AVX2 = 1, CPU_AVX512 = 2 };

/* The best level this machine supports (AVX2 means AVX2 + FMA + F16C;
 * AVX-512 means F + BW + VL + DQ). Cached after the first call. */
enum cpu_level cpu_detect(void);

/* cpu_detect() capped by $QWENPIPE_SIMD. Sets *bad_env (when not NULL) to
 * 1 if the variable is set to a value it does not know. */
enum cpu_level cpu_level_env(int *bad_env);

const char *cpu_level_name(enum cpu_level l);

/* Physical cores available to this process (sched affinity; at least 1).
 * This machine has one thread per core; on SMT machines it counts logical
 * CPUs divided by the threads per core that CPUID reports. */
int cpu_cores(void);

/* The family of an AMD processor (CPUID vendor "AuthenticAMD"; 25 for
 * Zen 3 and Zen 4, 26 for Zen 5), or 0 for any other vendor's. */
int cpu_amd_family(void);

#endif
