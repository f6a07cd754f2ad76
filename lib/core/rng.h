/* rng: the random generator of the sampler, xoshiro256** 1.0 (Blackman and
 * Vigna, https://prng.di.unimi.it/xoshiro256starstar.c), seeded by expanding
 * a 64-bit seed with splitmix64 (https://prng.di.unimi.it/splitmix64.c), as
 * its authors recommend.
 *
 * Everything is 64-bit integer arithmetic, so a seed gives the same sequence
 * on every machine, compiler and thread count. Not for cryptography.
 */
#ifndef RNG_H
#define RNG_H

#include <stdint.h>
#include "core/err.h"

struct rng {
	uint64_t s[4];
};

/* splitmix64: advances *state and returns the next output. */
uint64_t rng_splitmix64(uint64_t *state);

/* Seeds r: s[0..3] are four consecutive splitmix64 outputs from seed. */
void rng_seed(struct rng *r, uint64_t seed);

/* The next 64 random bits. */
uint64_t rng_next(struct rng *r);

/* A uniform double in [0, 1): the top 53 bits of rng_next times 2^-53. */
double rng_uniform(struct rng *r);

/* A seed from the operating system (getrandom), for runs without --seed.
 * Returns 0, or -1 with e set. */
int rng_system_seed(uint64_t *seed, struct err *e);

#endif
