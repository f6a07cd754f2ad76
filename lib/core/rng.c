/* rng: see rng.h. */
#include "core/rng.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

uint64_t rng_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	/* splitmix64 never yields four zeros in a row, the one state
	 * xoshiro256** must not be in. */
	for (int i = 0; i < 4; i++)
		r->s[i] = rng_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double rng_uniform(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

int rng_system_seed(uint64_t *seed, struct err *e)
{
	for (;;) {
		ssize_t n = getrandom(seed, sizeof *seed, 0);
		if (n == (ssize_t)sizeof *seed)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return err_set(e, "getrandom: %s", n < 0 ? strerror(errno) : "short read");
	}
}
