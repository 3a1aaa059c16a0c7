/*
 * kvq_rng.h -- the deterministic generator of vectors and tests (splitmix64).
 *
 * A counter-based generator: one 64-bit state reproduces a whole run, so a seed
 * printed on failure is all it takes to replay it [TEST-SEED-01].
 */
#ifndef KVQ_RNG_H
#define KVQ_RNG_H

#include <stdint.h>

typedef struct kvq_rng {
    uint64_t s;
} kvq_rng;

static inline uint64_t kvq_rng_next(kvq_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) up to the negligible bias of a 64-bit modulus. */
static inline uint32_t kvq_rng_below(kvq_rng *r, uint32_t n)
{
    return (uint32_t)(kvq_rng_next(r) % n);
}

/* Uniform on the 2^24 binary32 multiples of 2^-24 in [0, 1). */
static inline float kvq_rng_unit(kvq_rng *r)
{
    return (float)(kvq_rng_next(r) >> 40) * 0x1p-24f;
}

/* Uniform on the binary32 multiples of 2^-23 in [-1, 1). */
static inline float kvq_rng_sym(kvq_rng *r)
{
    return 2.0f * kvq_rng_unit(r) - 1.0f;
}

#endif /* KVQ_RNG_H */
