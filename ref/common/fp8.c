/*
 * fp8.c -- FP8 E4M3 / E5M2 conversions, fast path [POL-FP8-01..03].
 *
 * Integer operations on the binary32 encoding only (kvq_fp8_round_bits32,
 * include/kvq_fp8.h, which the device kernels share): no float arithmetic,
 * no MPFR, so nothing here depends on the host's rounding mode or flush
 * modes.  The encoding comes from kvq_f32_bits (ref/common/fbits.c, the one
 * place that looks at a float's bits).  A binary16 input is first widened to
 * its binary32 encoding, exactly, so every path rounds once.
 *
 * SPEC: [POL-FP8-01] E4M3: 4 significand bits, 2^-6, 448, overflow to NaN
 * SPEC: [POL-FP8-02] E5M2: 3 significand bits, 2^-14, 57344, overflow to Inf
 */
#include "kvq_bits.h"
#include "kvq_fp8.h"

/* The binary32 encoding of the binary16 encoding h (exact widening). */
static uint32_t bits32_of_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t e = (h >> 10) & 0x1Fu, f = h & 0x3FFu;
    uint32_t e32;
    if (e == 0x1Fu) return sign | 0x7F800000u | (f << 13); /* inf, or NaN (f != 0) */
    if (e != 0u) return sign | ((e + 112u) << 23) | (f << 13);
    if (f == 0u) return sign;
    /* Subnormal f 2^-24: normalize f to 1.xxx 2^(e32-127). */
    e32 = 113u;
    while ((f & 0x400u) == 0u) {
        f <<= 1;
        e32--;
    }
    return sign | (e32 << 23) | ((f & 0x3FFu) << 13);
}

uint8_t kvq_fp8_e4m3_from_f32(float x, uint32_t overflow_policy, uint32_t *flags)
{
    return kvq_fp8_round_bits32(kvq_f32_bits(x), 0u, overflow_policy, flags);
}

uint8_t kvq_fp8_e4m3_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    return kvq_fp8_round_bits32(bits32_of_f16(h), 0u, overflow_policy, flags);
}

uint8_t kvq_fp8_e5m2_from_f32(float x, uint32_t overflow_policy, uint32_t *flags)
{
    return kvq_fp8_round_bits32(kvq_f32_bits(x), 1u, overflow_policy, flags);
}

uint8_t kvq_fp8_e5m2_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    return kvq_fp8_round_bits32(bits32_of_f16(h), 1u, overflow_policy, flags);
}
