/*
 * fp8.c -- FP8 E4M3 / E5M2 conversions, fast path [POL-FP8-01..03].
 *
 * Integer operations on the binary32 encoding only: no float arithmetic, no
 * MPFR, so nothing here depends on the host's rounding mode or flush modes.
 * The encoding comes from kvq_f32_bits (ref/common/fbits.c, the one place
 * that looks at a float's bits).  A binary16 input is first widened to its
 * binary32 encoding, exactly, so every path rounds once: the value is
 * m 2^(e-23) with a 24-bit integer m, and rounding it onto the FP8 grid is
 * rounding the integer m / 2^shift to nearest even.
 */
#include "kvq_bits.h"
#include "kvq_fp8.h"

/* One FP8 format, in the terms of the rounding below. */
typedef struct fp8_fmt {
    uint32_t p;        /* significand bits, hidden bit included */
    int32_t emin;      /* the smallest normal is 2^emin */
    uint32_t maxcode;  /* magnitude code of the largest finite value */
    uint32_t ovfcode;  /* magnitude code of the non-saturating overflow result */
    uint32_t nancode;  /* magnitude code of the NaN kvq writes */
} fp8_fmt;

/* SPEC: [POL-FP8-01] 4 bits, 2^-6, 448; overflow result NaN (no infinity). */
static const fp8_fmt e4m3 = { 4u, -6, KVQ_FP8_E4M3_MAXCODE, KVQ_FP8_E4M3_NAN, KVQ_FP8_E4M3_NAN };
/* SPEC: [POL-FP8-02] 3 bits, 2^-14, 57344; overflow result infinity. */
static const fp8_fmt e5m2 = { 3u, -14, KVQ_FP8_E5M2_MAXCODE, KVQ_FP8_E5M2_INF, KVQ_FP8_E5M2_NAN };

static uint8_t overflowed(uint32_t sign, const fp8_fmt *fmt, uint32_t policy, uint32_t *flags)
{
    if (policy == KVQ_OVERFLOW_NAN) return (uint8_t)(sign | fmt->ovfcode); /* [POL-FP8-03] */
    if (flags != NULL) *flags |= KVQ_FLAG_SATURATED;                       /* [POL-OV-01] */
    return (uint8_t)(sign | fmt->maxcode);
}

/* SPEC: [POL-FP8-03] RN of the binary32 encoding u onto fmt's grid. */
static uint8_t from_bits32(uint32_t u, const fp8_fmt *fmt, uint32_t policy, uint32_t *flags)
{
    uint32_t sign = (u >> 31) ? KVQ_FP8_SIGN : 0u;
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t m, shift, n, rem, half, mag;
    int32_t e, te;

    if (a > 0x7F800000u) return (uint8_t)(sign | fmt->nancode); /* NaN, payload dropped */
    if (a == 0x7F800000u) return overflowed(sign, fmt, policy, flags);
    /* Zero, and binary32 subnormals (< 2^-126): far below half the smallest
     * FP8 subnormal (2^-10 or 2^-17), so they round to a zero of their sign. */
    if (a < 0x00800000u) return (uint8_t)sign;

    e = (int32_t)(a >> 23) - 127;            /* 2^e <= |x| < 2^(e+1) */
    m = (a & 0x007FFFFFu) | 0x00800000u;     /* |x| = m 2^(e-23), 2^23 <= m < 2^24 */
    te = e < fmt->emin ? fmt->emin : e;      /* the binade's exponent on the FP8 grid */
    /* The grid's quantum at |x| is 2^(te-p+1) = 2^(e-23) 2^shift, shift >= 24-p >= 20. */
    shift = (uint32_t)(24 - (int32_t)fmt->p + (te - e));
    if (shift >= 25u) {
        /* m < 2^24 <= 2^(shift-1): below half a quantum, so RN gives 0 (a tie is
         * impossible: it would need m = 2^(shift-1) >= 2^24). */
        n = 0u;
    } else {
        n = m >> shift;                      /* truncation of m / 2^shift */
        rem = m & ((1u << shift) - 1u);      /* what truncation dropped */
        half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (n & 1u))) n++; /* nearest, ties to even */
    }
    /* n 2^(te-p+1) is the rounded magnitude.  Its code: fields E = te - emin + 1
     * (0 for a subnormal, where te == emin and n < 2^(p-1)) and F = n - 2^(p-1);
     * E 2^(p-1) + F = (te - emin) 2^(p-1) + n in both cases, and a carry out of
     * the significand (n == 2^p) lands on the next binade's code by itself. */
    mag = (uint32_t)(te - fmt->emin) * (1u << (fmt->p - 1u)) + n;
    if (mag > fmt->maxcode) return overflowed(sign, fmt, policy, flags);
    return (uint8_t)(sign | mag);
}

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
    return from_bits32(kvq_f32_bits(x), &e4m3, overflow_policy, flags);
}

uint8_t kvq_fp8_e4m3_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    return from_bits32(bits32_of_f16(h), &e4m3, overflow_policy, flags);
}

uint8_t kvq_fp8_e5m2_from_f32(float x, uint32_t overflow_policy, uint32_t *flags)
{
    return from_bits32(kvq_f32_bits(x), &e5m2, overflow_policy, flags);
}

uint8_t kvq_fp8_e5m2_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    return from_bits32(bits32_of_f16(h), &e5m2, overflow_policy, flags);
}
