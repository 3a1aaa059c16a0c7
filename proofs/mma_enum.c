/*
 * mma_enum.c -- the lemmas of include/kvq_mma.h that quantify over a finite
 * domain, decided by enumerating it (proofs/TRUSTED.md [TR-LEMMA-ENUM]), and a
 * sampled check of the three C shift/mask lemmas, whose domain (every 64-bit
 * x) is too large to enumerate ([TR-GOAL-MMA-SHIFT]).
 *
 * pow2_l transcribes kvq_mma_pow2_l (by cases of kvq_mma_p8_l and
 * kvq_mma_p64_l) literally, in unsigned __int128 (k <= 127 never overflows).
 * proofs/run.sh compiles and runs this file on every proof run.
 */
#include <stdint.h>
#include <stdio.h>

typedef unsigned __int128 u128;

static u128 p8_l(int k)
{
    return k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 4 : k == 3 ? 8 : k == 4 ? 16 :
           k == 5 ? 32 : k == 6 ? 64 : k == 7 ? 128 : 256;
}
static u128 p64_l(int k)
{
    return k <= 8 ? p8_l(k) : k <= 16 ? (u128)0x100 * p8_l(k - 8) :
           k <= 24 ? (u128)0x10000 * p8_l(k - 16) : k <= 32 ? (u128)0x1000000 * p8_l(k - 24) :
           k <= 40 ? (u128)0x100000000ull * p8_l(k - 32) :
           k <= 48 ? (u128)0x10000000000ull * p8_l(k - 40) :
           k <= 56 ? (u128)0x1000000000000ull * p8_l(k - 48) :
           (u128)0x100000000000000ull * p8_l(k - 56);
}
static u128 pow2_l(int k)  /* 0 <= k <= 127 */
{
    return k <= 0 ? 1 : k <= 64 ? p64_l(k) : ((u128)1 << 64) * p64_l(k - 64);
}

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int main(void)
{
    long cases = 0, bad = 0;
    /* kvq_mma_pow2_pos, kvq_mma_pow2_succ, kvq_mma_pow2_mono: 0 <= k, a < b <= 127 */
    for (int k = 0; k <= 127; k++) {
        cases++;
        if (pow2_l(k) < 1 || pow2_l(k) != (u128)1 << k) { bad++; printf("kvq_mma_pow2_pos k=%d\n", k); }
        if (k <= 126) { cases++; if (pow2_l(k + 1) != 2 * pow2_l(k)) { bad++; printf("kvq_mma_pow2_succ k=%d\n", k); } }
        for (int b = k + 1; b <= 127; b++) {
            cases++;
            if (!(2 * pow2_l(k) <= pow2_l(b))) { bad++; printf("kvq_mma_pow2_mono a=%d b=%d\n", k, b); }
        }
    }
    /* kvq_mma_pow2_add: 0 <= a, b <= 63 */
    for (int a = 0; a <= 63; a++)
        for (int b = 0; b <= 63; b++) {
            cases++;
            if (pow2_l(a + b) != pow2_l(a) * pow2_l(b)) { bad++; printf("kvq_mma_pow2_add a=%d b=%d\n", a, b); }
        }
    /* kvq_mma_pow2_63 */
    cases++;
    if (pow2_l(63) != (u128)0x8000000000000000ull || pow2_l(64) != (u128)1 << 64) { bad++; printf("kvq_mma_pow2_63\n"); }
    /* kvq_mma_shl1: 0 <= k <= 63, the 64-bit shift the code writes */
    for (int k = 0; k <= 63; k++) {
        cases++;
        if ((u128)(((uint64_t)1) << k) != pow2_l(k)) { bad++; printf("kvq_mma_shl1 k=%d\n", k); }
    }
    printf("mma_enum: kvq_mma_pow2_pos, kvq_mma_pow2_succ, kvq_mma_pow2_mono, kvq_mma_pow2_add, kvq_mma_pow2_63, kvq_mma_shl1: %ld cases, %ld failures\n", cases, bad);

    /* Sample of kvq_mma_shl, kvq_mma_shr, kvq_mma_mask (x < 2^64 as the code
     * uses them; shl where x 2^k < 2^64): every k <= 63 against x = 0, 1, every
     * 2^i - 1, 2^i, 2^i + 1 and 4096 pseudo-random words at every bit length. */
    long scases = 0, sbad = 0;
    for (int k = 0; k <= 63; k++) {
        const u128 p = pow2_l(k);
        for (int i = -1; i <= 64; i++)
            for (int j = -1; j <= 4096; j++) {
                uint64_t x;
                if (j < 0) x = i < 0 ? 0u : i == 64 ? ~0ull : (1ull << i);
                else if (j < 3) x = i < 0 || i == 64 ? (uint64_t)j : (1ull << i) + (uint64_t)j - 1u;
                else x = i <= 0 ? mix((uint64_t)j) : i == 64 ? mix((uint64_t)j) : mix((uint64_t)(k * 8192 + j) ^ ((uint64_t)i << 40)) >> (64 - i);
                scases += 2;
                if ((u128)(x >> k) != (u128)x / p) { sbad++; printf("kvq_mma_shr x=%llx k=%d\n", (unsigned long long)x, k); }
                if ((u128)(x & (uint64_t)(p - 1)) != (u128)x % p) { sbad++; printf("kvq_mma_mask x=%llx k=%d\n", (unsigned long long)x, k); }
                if ((u128)x * p < ((u128)1 << 64)) {
                    scases++;
                    if ((u128)(x << k) != (u128)x * p) { sbad++; printf("kvq_mma_shl x=%llx k=%d\n", (unsigned long long)x, k); }
                }
            }
    }
    printf("mma_enum: kvq_mma_shl, kvq_mma_shr, kvq_mma_mask (sample, not exhaustive): %ld cases, %ld failures\n", scases, sbad);
    return bad + sbad != 0;
}
