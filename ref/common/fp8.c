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

/* The binary32 encoding of the binary16 encoding h (exact widening): the same
 * sign, the exponent rebiased (15 -> 127), the fraction moved to the top of
 * the 23-bit field; a subnormal is normalized.  Fields in / % * only. */
/*@ assigns \nothing;
    ensures sign: kvq_f32_sign_l(\result) == kvq_h_sign_l(h);
    behavior nonfinite:                               // infinity; NaN, payload kept
      assumes kvq_h_exp_l(h) == 31;
      ensures bits: kvq_f32_abs_l(\result) == 0x7F800000 + kvq_h_frac_l(h) * 8192;
    behavior normal:
      assumes 1 <= kvq_h_exp_l(h) <= 30;
      ensures bits: kvq_f32_abs_l(\result) ==
          (kvq_h_exp_l(h) + 112) * 8388608 + kvq_h_frac_l(h) * 8192;
    behavior zero:
      assumes kvq_h_exp_l(h) == 0 && kvq_h_frac_l(h) == 0;
      ensures bits: kvq_f32_abs_l(\result) == 0;
    behavior subnormal:
      assumes kvq_h_exp_l(h) == 0 && kvq_h_frac_l(h) != 0;
      // 2^-24 <= |x| < 2^-14, normal, and F 2^-24 == m 2^(e-23) (the same value)
      ensures normal: 103 <= kvq_f32_abs_l(\result) / 8388608 <= 112;
      ensures value: kvq_f32_m_l(kvq_f32_abs_l(\result)) ==
          kvq_h_frac_l(h) * kvq_fp8_pow2_l(126 - kvq_f32_abs_l(\result) / 8388608);
    complete behaviors;
    disjoint behaviors;
*/
static uint32_t bits32_of_f16(uint16_t h)
{
    uint32_t sign = h >= 0x8000u ? 0x80000000u : 0u;
    uint32_t e = h / 0x400u % 0x20u, f = h % 0x400u;
    uint32_t e32, r, u;
    /* The //@ asserts are WP's steps (make proofs); they compute nothing. */
    /*@ assert h_fields: e == kvq_h_exp_l(h) && f == kvq_h_frac_l(h) &&
            sign == kvq_h_sign_l(h) * 2147483648; */
    /* the fields are disjoint bit ranges: + is their | */
    if (e == 0x1Fu) return sign + 0x7F800000u + f * 0x2000u; /* inf, or NaN (f != 0) */
    if (e != 0u) return sign + (e + 112u) * 0x800000u + f * 0x2000u;
    if (f == 0u) return sign;
    /* Subnormal f 2^-24: normalize f to 1.xxx 2^(e32-127), that is, double f
     * until its bit 10 is set (f < 2^11 throughout). */
    e32 = 113u;
    //@ assert pow2_0: kvq_fp8_pow2_l(0) == 1;
    /*@ loop invariant f_range: 1 <= f < 0x800;
        loop invariant e_range: 103 <= e32 <= 113;
        loop invariant grows: kvq_fp8_pow2_l(113 - e32) <= f;
        loop invariant scaled: f == (h % 1024) * kvq_fp8_pow2_l(113 - e32);
        loop assigns f, e32;
        loop variant 0x400 - f;
    */
    while (f < 0x400u) {
        f *= 2u;
        e32--;
        //@ assert step: f == 2 * \at(f, LoopCurrent) && e32 == \at(e32, LoopCurrent) - 1;
        /*@ assert double:
                kvq_fp8_pow2_l(113 - e32) == 2 * kvq_fp8_pow2_l(113 - \at(e32, LoopCurrent)); */
    }
    //@ assert normalized: 103 <= e32 <= 112 && 0x400 <= f < 0x800;
    //@ assert shift13: kvq_fp8_pow2_l(126 - e32) == 8192 * kvq_fp8_pow2_l(113 - e32);
    r = e32 * 0x800000u + (f - 0x400u) * 0x2000u;           /* |x|'s encoding */
    //@ assert r_fields: r / 8388608 == e32 && kvq_f32_m_l(r) == f * 8192;
    //@ assert r_value: kvq_f32_m_l(r) == kvq_h_frac_l(h) * kvq_fp8_pow2_l(126 - e32);
    //@ assert r_abs: kvq_f32_abs_l(sign + r) == r && kvq_f32_sign_l(sign + r) == kvq_h_sign_l(h);
    u = sign + r;
    //@ assert u_def: u == sign + r && kvq_f32_abs_l(u) == r;
    /*@ assert u_value: kvq_f32_m_l(kvq_f32_abs_l(u)) ==
            kvq_h_frac_l(h) * kvq_fp8_pow2_l(126 - kvq_f32_abs_l(u) / 8388608); */
    return u;
}

uint8_t kvq_fp8_e4m3_from_f32(float x, uint32_t overflow_policy, uint32_t *flags)
{
    return kvq_fp8_round_bits32(kvq_f32_bits(x), 0u, overflow_policy, flags);
}

/* Overflow of a binary16 input [POL-FP8-03] is decided on the fields of h
 * (lemma kvq_h_e4m3_ovf: |v| > 464 exactly when E > 23, or E = 23 and
 * F > 832), which is the binary32 encoding's a > 0x43E80000 that
 * kvq_fp8_round_bits32 tests; the assertion is that step, for WP. */
uint8_t kvq_fp8_e4m3_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    uint32_t u = bits32_of_f16(h);
    /*@ assert ovf: kvq_h_exp_l(h) < 31 ==>
            (kvq_e4m3_ovf_l(kvq_h_value_l(h)) <==> !kvq_fp8_fits_l(kvq_f32_abs_l(u), 0)); */
    return kvq_fp8_round_bits32(u, 0u, overflow_policy, flags);
}

uint8_t kvq_fp8_e5m2_from_f32(float x, uint32_t overflow_policy, uint32_t *flags)
{
    return kvq_fp8_round_bits32(kvq_f32_bits(x), 1u, overflow_policy, flags);
}

/* The same for E5M2 (lemma kvq_h_e5m2_ovf: |v| >= 61440 exactly when E = 30
 * and F >= 896, the encoding's a >= 0x47700000). */
uint8_t kvq_fp8_e5m2_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    uint32_t u = bits32_of_f16(h);
    /*@ assert ovf: kvq_h_exp_l(h) < 31 ==>
            (kvq_e5m2_ovf_l(kvq_h_value_l(h)) <==> !kvq_fp8_fits_l(kvq_f32_abs_l(u), 1)); */
    return kvq_fp8_round_bits32(u, 1u, overflow_policy, flags);
}
