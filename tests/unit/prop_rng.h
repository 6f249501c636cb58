/*
 * prop_rng.h - the generator of the random-case property tests: one 64-bit
 * LCG (Knuth's MMIX constants), seeded from each test's command line, so a
 * failing case is replayed by its seed. Include it once per test program.
 */
#ifndef PROP_RNG_H
#define PROP_RNG_H

#include <stdint.h>

static uint64_t rng_state;

/* A number in [0, n), n >= 1. */
static inline uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

#endif
