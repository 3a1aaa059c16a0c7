/*
 * kvq_fp8.h -- the shared FP8 numeric module: E4M3 and E5M2 codes, their
 * values, and the conversions from binary32 and binary16 [POL-FP8-01..03].
 *
 * Families that store FP8 codes (SAGE, and CERT where it uses FP8) call these
 * functions and no other file encodes or decodes an FP8 code.  Plain C11 that
 * nvcc also compiles: the decoders are KVQ_HD static inline and use only
 * integer and exact binary32 arithmetic (every FP8 value is a binary32 value,
 * so decoding never rounds); the encoders are the fast path
 * (ref/common/fp8.c: integer operations on the binary32 encoding, one
 * rounding); their MPFR twins are in kvq_exact_fp8.h (ref/exact/fp8.c).
 *
 * Code layout (a code is a uint8_t c, 0 <= c < 256), fields in / % only:
 *   sign S = c / 128;
 *   E4M3: exponent E = (c / 8) % 16 (bias 7),  fraction F = c % 8;
 *   E5M2: exponent E = (c / 4) % 32 (bias 15), fraction F = c % 4.
 * Values:
 *   E4M3: E = 0: (-1)^S F 2^-9;  1 <= E: (-1)^S (8 + F) 2^(E-10);
 *         NaN iff E = 15 and F = 7 (c % 128 == 127); no infinity.
 *   E5M2: E = 0: (-1)^S F 2^-16; 1 <= E <= 30: (-1)^S (4 + F) 2^(E-17);
 *         E = 31: infinity (F = 0), NaN (F != 0).
 *
 * Conversion [POL-FP8-03]: round to nearest, ties to even, once, onto the FP8
 * grid with its subnormals.  Overflow (E4M3: |x| > 464; E5M2: |x| >= 61440;
 * and every infinity) under KVQ_OVERFLOW_SATURATE gives +-max and ORs
 * KVQ_FLAG_SATURATED into *flags; under KVQ_OVERFLOW_NAN it gives the
 * non-saturating result: E4M3 NaN S.1111.111, E5M2 infinity S.11111.00.  A NaN
 * gives the canonical NaN S.1111.111 (E4M3) or the quiet NaN S.11111.11 (E5M2)
 * with the input's sign; the payload is not carried.  The flags word is only
 * ever OR-ed with KVQ_FLAG_SATURATED (flags may be NULL); nothing else is
 * written.  Any overflow_policy other than KVQ_OVERFLOW_NAN is read as
 * KVQ_OVERFLOW_SATURATE (callers validate policies with kvq_policy_check).
 *
 * The ACSL below states which code each function returns.  WP proves (make
 * proofs, proofs/TRUSTED.md [TR-SCOPE]) the classifiers, the decoders' cases
 * and fields, the encoder kvq_fp8_round_bits32 in full (the code as / % *
 * of the input's fields, the overflow threshold and both policies, the flags
 * word) and the binary16 conversions but for their real-valued RN claim; the
 * decoders' binary32 value and sign and the conversions from binary32 are
 * tests' (tests/check_fp8.c and `make fp8-exhaustive` compare the fast path
 * with the exact path).
 */
#ifndef KVQ_FP8_H
#define KVQ_FP8_H

#include <math.h>
#include <stdint.h>

#include "kvq.h"
#include "kvq_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Codes (magnitudes; OR KVQ_FP8_SIGN for the negative ones) [POL-FP8-01..02]. */
#define KVQ_FP8_SIGN         0x80u
#define KVQ_FP8_E4M3_MAXCODE 0x7Eu       /* S.1111.110 = 448 */
#define KVQ_FP8_E4M3_NAN     0x7Fu       /* S.1111.111, the only NaN */
#define KVQ_FP8_E5M2_MAXCODE 0x7Bu       /* S.11110.11 = 57344 */
#define KVQ_FP8_E5M2_INF     0x7Cu       /* S.11111.00 */
#define KVQ_FP8_E5M2_NAN     0x7Fu       /* S.11111.11, the quiet NaN kvq writes */

/* Values. */
#define KVQ_FP8_E4M3_MAX     0x1.cp+8f   /* 448 */
#define KVQ_FP8_E4M3_MIN     0x1p-6f     /* smallest normal */
#define KVQ_FP8_E4M3_TRUE_MIN 0x1p-9f    /* smallest subnormal */
#define KVQ_FP8_E5M2_MAX     0x1.cp+15f  /* 57344 */
#define KVQ_FP8_E5M2_MIN     0x1p-14f
#define KVQ_FP8_E5M2_TRUE_MIN 0x1p-16f

/*@ // Fields of a code c, 0 <= c < 256 [POL-FP8-01..02], in / % only.
    logic integer kvq_fp8_sign_l(integer c) = c / 128;
    logic integer kvq_e4m3_exp_l(integer c) = (c / 8) % 16;
    logic integer kvq_e4m3_frac_l(integer c) = c % 8;
    logic integer kvq_e5m2_exp_l(integer c) = (c / 4) % 32;
    logic integer kvq_e5m2_frac_l(integer c) = c % 4;
    logic real kvq_fp8_sgn_l(integer c) = kvq_fp8_sign_l(c) == 1 ? -1.0 : 1.0;

    predicate kvq_e4m3_nan_l(integer c) = c % 128 == 127;
    predicate kvq_e5m2_inf_l(integer c) = c % 128 == 124;
    predicate kvq_e5m2_nan_l(integer c) = c % 128 > 124;
    predicate kvq_e5m2_finite_l(integer c) = c % 128 < 124;

    // 2^k for 0 <= k <= 31 (by cases of kvq_pow2_l, which the provers evaluate).
    logic integer kvq_fp8_pow2_l(integer k) =
        k <= 8 ? kvq_pow2_l(k) : k <= 16 ? 256 * kvq_pow2_l(k - 8) :
        k <= 24 ? 65536 * kvq_pow2_l(k - 16) : 16777216 * kvq_pow2_l(k - 24);

    // The value of a code that is not a NaN (E4M3) or not a NaN or infinity (E5M2):
    // 2^(E-10) = 2^E 2^-10 and 2^(E-17) = 2^E 2^-17 (E <= 15, E <= 30).
    logic real kvq_e4m3_value_l(integer c) =
        kvq_fp8_sgn_l(c) *
        (kvq_e4m3_exp_l(c) == 0 ? kvq_e4m3_frac_l(c) * 0x1p-9
                                : (8 + kvq_e4m3_frac_l(c)) * kvq_fp8_pow2_l(kvq_e4m3_exp_l(c)) *
                                  0x1p-10);
    logic real kvq_e5m2_value_l(integer c) =
        kvq_fp8_sgn_l(c) *
        (kvq_e5m2_exp_l(c) == 0 ? kvq_e5m2_frac_l(c) * 0x1p-16
                                : (4 + kvq_e5m2_frac_l(c)) * kvq_fp8_pow2_l(kvq_e5m2_exp_l(c)) *
                                  0x1p-17);

    // c is RN(x) among the finite codes: no finite code is nearer, a tie goes to
    // the even code (even fraction), and c carries the sign s (0 or 1) [POL-FP8-03].
    predicate kvq_e4m3_rn_l(real x, integer s, integer c) =
        0 <= c < 256 && !kvq_e4m3_nan_l(c) && kvq_fp8_sign_l(c) == s &&
        \forall integer d; 0 <= d < 256 && !kvq_e4m3_nan_l(d) ==>
            \abs(x - kvq_e4m3_value_l(c)) < \abs(x - kvq_e4m3_value_l(d)) ||
            kvq_e4m3_value_l(c) == kvq_e4m3_value_l(d) ||
            (\abs(x - kvq_e4m3_value_l(c)) == \abs(x - kvq_e4m3_value_l(d)) && c % 2 == 0);
    predicate kvq_e5m2_rn_l(real x, integer s, integer c) =
        0 <= c < 256 && kvq_e5m2_finite_l(c) && kvq_fp8_sign_l(c) == s &&
        \forall integer d; 0 <= d < 256 && kvq_e5m2_finite_l(d) ==>
            \abs(x - kvq_e5m2_value_l(c)) < \abs(x - kvq_e5m2_value_l(d)) ||
            kvq_e5m2_value_l(c) == kvq_e5m2_value_l(d) ||
            (\abs(x - kvq_e5m2_value_l(c)) == \abs(x - kvq_e5m2_value_l(d)) && c % 2 == 0);

    // Overflow [POL-FP8-03]: the rounded magnitude (unbounded exponent) exceeds max.
    predicate kvq_e4m3_ovf_l(real x) = \abs(x) > 464;
    predicate kvq_e5m2_ovf_l(real x) = \abs(x) >= 61440;

    // The flags word after an event: bit 2 (KVQ_FLAG_SATURATED) set, others kept.
    logic integer kvq_flags_sat_l(integer f) = (f / 4) % 2 == 1 ? f : f + 4;

    // A binary16 encoding h, 0 <= h < 65536: fields and value.
    logic integer kvq_h_sign_l(integer h) = h / 32768;
    logic integer kvq_h_exp_l(integer h) = (h / 1024) % 32;
    logic integer kvq_h_frac_l(integer h) = h % 1024;
    predicate kvq_h_nan_l(integer h) = kvq_h_exp_l(h) == 31 && kvq_h_frac_l(h) != 0;
    predicate kvq_h_inf_l(integer h) = kvq_h_exp_l(h) == 31 && kvq_h_frac_l(h) == 0;
    logic real kvq_h_value_l(integer h) =
        (kvq_h_sign_l(h) == 1 ? -1.0 : 1.0) *
        (kvq_h_exp_l(h) == 0 ? kvq_h_frac_l(h) * 0x1p-24
                             : (1024 + kvq_h_frac_l(h)) * kvq_fp8_pow2_l(kvq_h_exp_l(h)) * 0x1p-25);

    // ---- the encoder kvq_fp8_round_bits32 in / % * [POL-FP8-03] -------------
    // A binary32 encoding u (0 <= u < 2^32): its sign and |x|'s encoding a.
    logic integer kvq_f32_sign_l(integer u) = u / 2147483648;
    logic integer kvq_f32_abs_l(integer u) = u % 2147483648;
    // A normal a (2^23 <= a < 0x7F800000): |x| = m 2^(e-23), 2^23 <= m < 2^24.
    logic integer kvq_f32_e_l(integer a) = a / 8388608 - 127;
    logic integer kvq_f32_m_l(integer a) = a % 8388608 + 8388608;
    // The format fmt (0: E4M3, else E5M2): smallest normal 2^emin, largest finite
    // magnitude code, the code of an overflow under KVQ_OVERFLOW_NAN.
    logic integer kvq_fp8_emin_l(integer fmt) = fmt == 0 ? -6 : -14;
    logic integer kvq_fp8_maxcode_l(integer fmt) = fmt == 0 ? 126 : 123;
    logic integer kvq_fp8_ovfcode_l(integer fmt) = fmt == 0 ? 127 : 124;
    // The binade of |x| on the FP8 grid and the shift that puts the grid's
    // quantum 2^(te-p+1) = 2^(e-23) 2^shift at the unit (p = 4 or 3 significand bits).
    logic integer kvq_fp8_te_l(integer a, integer fmt) =
        kvq_f32_e_l(a) < kvq_fp8_emin_l(fmt) ? kvq_fp8_emin_l(fmt) : kvq_f32_e_l(a);
    logic integer kvq_fp8_shift_l(integer a, integer fmt) =
        (fmt == 0 ? 20 : 21) + (kvq_fp8_te_l(a, fmt) - kvq_f32_e_l(a));
    // m / 2^k rounded to the nearest integer, ties to the even one; 0 for k >= 25
    // (m < 2^24 is then below half a quantum).
    logic integer kvq_fp8_rne_l(integer m, integer k) =
        k >= 25 ? 0 :
        (m % kvq_fp8_pow2_l(k) > kvq_fp8_pow2_l(k - 1) ||
         (m % kvq_fp8_pow2_l(k) == kvq_fp8_pow2_l(k - 1) && (m / kvq_fp8_pow2_l(k)) % 2 == 1)) ?
            m / kvq_fp8_pow2_l(k) + 1 : m / kvq_fp8_pow2_l(k);
    // The magnitude code E 2^(p-1) + F of a normal a: (te - emin) 2^(p-1) + n with
    // n the rounded significand (a carry n = 2^p lands on the next binade's code).
    logic integer kvq_fp8_mag_l(integer a, integer fmt) =
        (fmt == 0 ? 8 * (kvq_fp8_te_l(a, fmt) + 6) : 4 * (kvq_fp8_te_l(a, fmt) + 14)) +
        kvq_fp8_rne_l(kvq_f32_m_l(a), kvq_fp8_shift_l(a, fmt));
    // |x| rounds to a finite code [POL-FP8-03]: E4M3 |x| <= 464 = 0x43E80000 (the
    // tie 464 goes to the even 448), E5M2 |x| < 61440 = 0x47700000.
    predicate kvq_fp8_fits_l(integer a, integer fmt) =
        fmt == 0 ? a <= 0x43E80000 : a < 0x47700000;

    // Overflow of a binary16 value in its fields [POL-FP8-03]: |v| = (1024 + F) 2^(E-25)
    // for 1 <= E <= 30 and < 2^-14 for E = 0, so |v| > 464 = 1856 2^(23-25) exactly
    // when E > 23 or E = 23 and F > 832, and |v| >= 61440 = 1920 2^(30-25) exactly
    // when E = 30 and F >= 896.  Decided by enumerating every h (proofs/lemmas_enum.c,
    // proofs/TRUSTED.md [TR-LEMMA-ENUM]).
    lemma kvq_h_e4m3_ovf: \forall integer h; 0 <= h < 65536 && kvq_h_exp_l(h) < 31 ==>
        (kvq_e4m3_ovf_l(kvq_h_value_l(h)) <==>
         kvq_h_exp_l(h) > 23 || (kvq_h_exp_l(h) == 23 && kvq_h_frac_l(h) > 832));
    lemma kvq_h_e5m2_ovf: \forall integer h; 0 <= h < 65536 && kvq_h_exp_l(h) < 31 ==>
        (kvq_e5m2_ovf_l(kvq_h_value_l(h)) <==> kvq_h_exp_l(h) == 30 && kvq_h_frac_l(h) >= 896);

    // C's shifts, masks and | on the ranges the encoder and decoders use.  WP's
    // bit-operator theory cannot derive them; each is decided by enumerating its
    // whole domain (proofs/lemmas_enum.c, proofs/TRUSTED.md [TR-LEMMA-ENUM]).
    lemma kvq_fp8_shl1: \forall integer k; 0 <= k <= 31 ==> (1 << k) == kvq_fp8_pow2_l(k);
    lemma kvq_fp8_shr: \forall integer x, k; 0 <= x < 16777216 && 0 <= k <= 24 ==>
        (x >> k) == x / kvq_fp8_pow2_l(k);
    lemma kvq_fp8_mask: \forall integer x, k; 0 <= x < 16777216 && 0 <= k <= 24 ==>
        (x & (kvq_fp8_pow2_l(k) - 1)) == x % kvq_fp8_pow2_l(k);
    lemma kvq_flags_or_sat: \forall integer f; 0 <= f <= 4294967295 ==>
        (f | 4) == kvq_flags_sat_l(f);
*/

/* ---------------------------------------------------------------------------
 * Classification and decoding (exact: every FP8 value is a binary32 value).
 * ------------------------------------------------------------------------- */

/* 1 iff c is the E4M3 NaN (S.1111.111). */
/*@ assigns \nothing;
    ensures def: \result == 1 <==> kvq_e4m3_nan_l(c);      // [POL-FP8-01]
    ensures bool: \result == 0 || \result == 1;
*/
KVQ_HD static inline int kvq_fp8_e4m3_is_nan(uint8_t c)
{
    return c % 128u == 127u;
}

/* 1 iff c is an E5M2 NaN (S.11111.{01,10,11}). */
/*@ assigns \nothing;
    ensures def: \result == 1 <==> kvq_e5m2_nan_l(c);      // [POL-FP8-02]
    ensures bool: \result == 0 || \result == 1;
*/
KVQ_HD static inline int kvq_fp8_e5m2_is_nan(uint8_t c)
{
    return c % 128u > 124u;
}

/* 1 iff c is an E5M2 infinity (S.11111.00). */
/*@ assigns \nothing;
    ensures def: \result == 1 <==> kvq_e5m2_inf_l(c);      // [POL-FP8-02]
    ensures bool: \result == 0 || \result == 1;
*/
KVQ_HD static inline int kvq_fp8_e5m2_is_inf(uint8_t c)
{
    return c % 128u == 124u;
}

/* The binary32 value of an E4M3 code.  A NaN code gives the default quiet NaN
 * of binary32 with the code's sign (0x7FC00000 / 0xFFC00000: NAN and -NAN). */
/*@ assigns \nothing;
    behavior nan:
      assumes kvq_e4m3_nan_l(c);
      ensures is_nan: \is_NaN(\result);
      ensures sign: kvq_fp8_sign_l(c) == 1 <==> \sign(\result) == \Negative;
    behavior finite:
      assumes !kvq_e4m3_nan_l(c);
      ensures finite: \is_finite(\result);
      ensures value: \result == kvq_e4m3_value_l(c);                    // [POL-FP8-01]
      ensures sign: kvq_fp8_sign_l(c) == 1 <==> \sign(\result) == \Negative; // -0 for 0x80
    complete behaviors;
    disjoint behaviors;
*/
KVQ_HD static inline float kvq_fp8_e4m3_to_f32(uint8_t c)
{
    uint32_t e = (c / 8u) % 16u, f = c % 8u;
    float mag;
    //@ assert fields: e == kvq_e4m3_exp_l(c) && f == kvq_e4m3_frac_l(c);
    if (c % 128u == 127u) return c / 128u ? -NAN : NAN;
    if (e == 0u) {
        mag = (float)f * 0x1p-9f;                                 /* exact: f < 8 */
        //@ assert exact: \is_finite(mag) && mag == f * 0x1p-9;
    } else {
        //@ assert pow2: (1u << e) == kvq_fp8_pow2_l(e);
        mag = (float)(8u + f) * ((float)(1u << e) * 0x1p-10f);    /* exact: powers of two */
        //@ assert exact: \is_finite(mag) && mag == (8 + f) * kvq_fp8_pow2_l(e) * 0x1p-10;
    }
    return c / 128u ? -mag : mag;
}

/* The binary32 value of an E5M2 code: +-infinity for S.11111.00, the default
 * quiet NaN of binary32 with the code's sign for the NaN codes (payload not
 * carried). */
/*@ assigns \nothing;
    behavior nan:
      assumes kvq_e5m2_nan_l(c);
      ensures is_nan: \is_NaN(\result);
      ensures sign: kvq_fp8_sign_l(c) == 1 <==> \sign(\result) == \Negative;
    behavior inf:
      assumes kvq_e5m2_inf_l(c);
      ensures plus_inf: kvq_fp8_sign_l(c) == 0 ==> \is_plus_infinity(\result);
      ensures minus_inf: kvq_fp8_sign_l(c) == 1 ==> \is_minus_infinity(\result);
    behavior finite:
      assumes kvq_e5m2_finite_l(c);
      ensures finite: \is_finite(\result);
      ensures value: \result == kvq_e5m2_value_l(c);                    // [POL-FP8-02]
      ensures sign: kvq_fp8_sign_l(c) == 1 <==> \sign(\result) == \Negative;
    complete behaviors;
    disjoint behaviors;
*/
KVQ_HD static inline float kvq_fp8_e5m2_to_f32(uint8_t c)
{
    uint32_t e = (c / 4u) % 32u, f = c % 4u;
    float mag;
    //@ assert fields: e == kvq_e5m2_exp_l(c) && f == kvq_e5m2_frac_l(c);
    if (e == 31u) {
        if (f != 0u) return c / 128u ? -NAN : NAN;
        mag = INFINITY;
    } else if (e == 0u) {
        mag = (float)f * 0x1p-16f;                                /* exact: f < 4 */
        //@ assert exact: \is_finite(mag) && mag == f * 0x1p-16;
    } else {
        //@ assert pow2: (1u << e) == kvq_fp8_pow2_l(e);
        mag = (float)(4u + f) * ((float)(1u << e) * 0x1p-17f);    /* exact: powers of two */
        //@ assert exact: \is_finite(mag) && mag == (4 + f) * kvq_fp8_pow2_l(e) * 0x1p-17;
    }
    return c / 128u ? -mag : mag;
}

/* ---------------------------------------------------------------------------
 * The encoder behind every conversion below and the device kernels
 * (gpu/sage/): round the binary32 encoding u to nearest even onto E4M3
 * (e5m2 == 0) or E5M2 (e5m2 != 0) [POL-FP8-03].  Integer operations on the
 * encoding only, so it depends on no rounding or flush mode and on no
 * conversion instruction.  |x| = m 2^(e-23) with a 24-bit integer m, so
 * rounding onto the FP8 grid is rounding m / 2^shift to nearest even.  NaN
 * keeps its sign and drops its payload; binary32 subnormals round to a zero
 * of their sign (they lie far below half the smallest FP8 subnormal).
 * Overflow (infinity, or a rounded magnitude above the largest finite code):
 * the E4M3 NaN / E5M2 infinity under KVQ_OVERFLOW_NAN, else the largest
 * finite code with KVQ_FLAG_SATURATED OR-ed into *flags (flags may be NULL)
 * [POL-OV-01].
 * ------------------------------------------------------------------------- */
/*@ requires flags_ok: flags == \null || \valid(flags);
    assigns *flags;
    ensures sign: kvq_fp8_sign_l(\result) == kvq_f32_sign_l(u);                // [POL-FP8-03]
    behavior nan:
      assumes kvq_f32_abs_l(u) > 0x7F800000;
      assigns \nothing;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures nan_code: \result % 128 == 127;          // E4M3 S.1111.111, E5M2 S.11111.11
    behavior zero:
      assumes kvq_f32_abs_l(u) < 0x800000;             // +-0 and the binary32 subnormals
      assigns \nothing;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures zero_code: \result % 128 == 0;
    behavior in_range:
      assumes 0x800000 <= kvq_f32_abs_l(u) && kvq_fp8_fits_l(kvq_f32_abs_l(u), e5m2);
      assigns \nothing;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures code: \result % 128 == kvq_fp8_mag_l(kvq_f32_abs_l(u), e5m2);  // [POL-FP8-03]
      ensures finite: \result % 128 <= kvq_fp8_maxcode_l(e5m2);
    behavior overflow_nan:
      assumes kvq_f32_abs_l(u) <= 0x7F800000 && !kvq_fp8_fits_l(kvq_f32_abs_l(u), e5m2);
      assumes overflow_policy == KVQ_OVERFLOW_NAN;
      assigns \nothing;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures ovf_code: \result % 128 == kvq_fp8_ovfcode_l(e5m2);            // [POL-FP8-03]
    behavior overflow_saturate:
      assumes kvq_f32_abs_l(u) <= 0x7F800000 && !kvq_fp8_fits_l(kvq_f32_abs_l(u), e5m2);
      assumes overflow_policy != KVQ_OVERFLOW_NAN;
      ensures max_code: \result % 128 == kvq_fp8_maxcode_l(e5m2);            // [POL-OV-01]
      ensures flag: flags != \null ==> *flags == kvq_flags_sat_l(\old(*flags));
    complete behaviors;
    disjoint behaviors;
*/
KVQ_HD static inline uint8_t kvq_fp8_round_bits32(uint32_t u, uint32_t e5m2,
                                                  uint32_t overflow_policy, uint32_t *flags)
{
    const uint32_t p = e5m2 ? 3u : 4u;                       /* significand bits, hidden one */
    const uint32_t lead = e5m2 ? 4u : 8u;                    /* 2^(p-1): the hidden one's place */
    const int32_t emin = e5m2 ? -14 : -6;                     /* smallest normal 2^emin */
    const uint32_t maxcode = e5m2 ? KVQ_FP8_E5M2_MAXCODE : KVQ_FP8_E4M3_MAXCODE;
    const uint32_t ovfcode = e5m2 ? KVQ_FP8_E5M2_INF : KVQ_FP8_E4M3_NAN;
    const uint32_t nancode = e5m2 ? KVQ_FP8_E5M2_NAN : KVQ_FP8_E4M3_NAN;
    const uint32_t sign = u >= 0x80000000u ? KVQ_FP8_SIGN : 0u;
    const uint32_t a = u % 0x80000000u;                      /* |x|'s encoding: drop the sign */
    /* codes below are sign + a magnitude code < 128: + is the sign bit's | */
    if (a > 0x7F800000u) return (uint8_t)(sign + nancode);   /* NaN, payload dropped */
    if (a < 0x00800000u) return (uint8_t)sign;               /* zero, binary32 subnormal */
    if (a != 0x7F800000u) {
        const int32_t e = (int32_t)(a / 0x00800000u) - 127;  /* 2^e <= |x| < 2^(e+1) */
        const uint32_t m = a % 0x00800000u + 0x00800000u;    /* |x| = m 2^(e-23) */
        const int32_t te = e < emin ? emin : e;               /* the binade on the FP8 grid */
        /* the grid's quantum at |x| is 2^(te-p+1) = 2^(e-23) 2^shift, shift >= 20 */
        const uint32_t shift = (uint32_t)(24 - (int32_t)p + (te - e));
        uint32_t n = 0u, mag;
        /* The //@ asserts are WP's steps (make proofs); they compute nothing. */
        //@ assert shift_def: shift == kvq_fp8_shift_l(a, e5m2) && shift >= 20;
        if (shift < 25u) {                                    /* else below half a quantum: 0 */
            const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
            n = m >> shift;
            /*@ assert fields: n == m / kvq_fp8_pow2_l(shift) &&
                    rem == m % kvq_fp8_pow2_l(shift) && half == kvq_fp8_pow2_l(shift - 1); */
            if (rem > half || (rem == half && n % 2u == 1u)) n++; /* nearest, ties to even */
            //@ assert pow2_20_21: kvq_fp8_pow2_l(20) == 0x100000 && kvq_fp8_pow2_l(21) == 0x200000;
            //@ assert normal: shift == (e5m2 ? 21 : 20) ==> lead <= n <= 2 * lead;
            //@ assert top_e4m3: e5m2 == 0 && shift == 20 ==> (n <= 14 <==> m <= 0xE80000);
            //@ assert top_e5m2: e5m2 != 0 && shift == 21 ==> (n <= 7 <==> m < 0xF00000);
        }
        //@ assert n_def: n == kvq_fp8_rne_l(m, shift);
        //@ assert n_range: n <= 2 * lead;
        /* fields E = te - emin + 1 (0 for a subnormal) and F = n - 2^(p-1):
         * E 2^(p-1) + F = (te - emin) 2^(p-1) + n, and a carry out of the
         * significand (n == 2^p) lands on the next binade's code by itself */
        mag = (uint32_t)(te - emin) * lead + n;
        //@ assert mag_def: mag == kvq_fp8_mag_l(a, e5m2);
        /* mag <= maxcode exactly when |x| <= 464 (E4M3) or |x| < 61440 (E5M2):
         * by binade, the top one (2^8, 2^15) decided by the rounded significand
         * (E4M3: n <= 14 iff m <= 14.5 2^20, the tie going to the even 14) */
        //@ assert below_normal: te != e ==> mag <= lead;
        /*@ assert low_binade: te == e && e < (e5m2 ? 15 : 8) ==>
                mag <= maxcode && kvq_fp8_fits_l(a, e5m2); */
        /*@ assert high_binade: te == e && e > (e5m2 ? 15 : 8) ==>
                mag > maxcode && !kvq_fp8_fits_l(a, e5m2); */
        /*@ assert top_binade: te == e && e == (e5m2 ? 15 : 8) ==>
                (mag <= maxcode <==> kvq_fp8_fits_l(a, e5m2)); */
        //@ assert threshold: mag <= maxcode <==> kvq_fp8_fits_l(a, e5m2);
        if (mag <= maxcode) return (uint8_t)(sign + mag);
    }
    if (overflow_policy == KVQ_OVERFLOW_NAN) return (uint8_t)(sign + ovfcode); /* [POL-FP8-03] */
    if (flags != NULL) *flags |= KVQ_FLAG_SATURATED;                           /* [POL-OV-01] */
    return (uint8_t)(sign + maxcode);
}

/* ---------------------------------------------------------------------------
 * Conversions, fast path (ref/common/fp8.c) [POL-FP8-03].
 * overflow_policy: KVQ_OVERFLOW_SATURATE or KVQ_OVERFLOW_NAN; flags: NULL or
 * a word that receives KVQ_FLAG_SATURATED (OR-ed) when a value saturates.
 * ------------------------------------------------------------------------- */

/*@ requires flags_ok: flags == \null || \valid(flags);
    requires policy: overflow_policy == KVQ_OVERFLOW_SATURATE ||
                     overflow_policy == KVQ_OVERFLOW_NAN;       // [POL-01]
    assigns *flags;
    behavior nan_in:
      assumes \is_NaN(x);
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures nan_out: \result == (\sign(x) == \Negative ? 255 : 127); // [POL-FP8-03]
    behavior overflow_saturate:
      assumes !\is_NaN(x) && (\is_infinite(x) || kvq_e4m3_ovf_l(x));
      assumes overflow_policy != KVQ_OVERFLOW_NAN;
      ensures max: \result == (\sign(x) == \Negative ? 254 : 126);     // [POL-OV-01]
      ensures flag: flags != \null ==> *flags == kvq_flags_sat_l(\old(*flags));
    behavior overflow_nan:
      assumes !\is_NaN(x) && (\is_infinite(x) || kvq_e4m3_ovf_l(x));
      assumes overflow_policy == KVQ_OVERFLOW_NAN;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures nan_out: \result == (\sign(x) == \Negative ? 255 : 127); // [POL-FP8-03]
    behavior in_range:
      assumes \is_finite(x) && !kvq_e4m3_ovf_l(x);
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures rn: kvq_e4m3_rn_l(x, \sign(x) == \Negative ? 1 : 0, \result);
    complete behaviors;
    disjoint behaviors;
*/
uint8_t kvq_fp8_e4m3_from_f32(float x, uint32_t overflow_policy, uint32_t *flags);

/* h: a binary16 encoding.  Exactly kvq_fp8_e4m3_from_f32 of its value (the
 * widening to binary32 is exact, so there is still one rounding). */
/*@ requires flags_ok: flags == \null || \valid(flags);
    requires policy: overflow_policy == KVQ_OVERFLOW_SATURATE ||
                     overflow_policy == KVQ_OVERFLOW_NAN;
    assigns *flags;
    behavior nan_in:
      assumes kvq_h_nan_l(h);
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures nan_out: \result == (kvq_h_sign_l(h) == 1 ? 255 : 127);
    behavior overflow_saturate:
      assumes kvq_h_inf_l(h) || (!kvq_h_nan_l(h) && kvq_e4m3_ovf_l(kvq_h_value_l(h)));
      assumes overflow_policy != KVQ_OVERFLOW_NAN;
      ensures max: \result == (kvq_h_sign_l(h) == 1 ? 254 : 126);
      ensures flag: flags != \null ==> *flags == kvq_flags_sat_l(\old(*flags));
    behavior overflow_nan:
      assumes kvq_h_inf_l(h) || (!kvq_h_nan_l(h) && kvq_e4m3_ovf_l(kvq_h_value_l(h)));
      assumes overflow_policy == KVQ_OVERFLOW_NAN;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures nan_out: \result == (kvq_h_sign_l(h) == 1 ? 255 : 127);
    behavior in_range:
      assumes kvq_h_exp_l(h) < 31 && !kvq_e4m3_ovf_l(kvq_h_value_l(h));
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures rn: kvq_e4m3_rn_l(kvq_h_value_l(h), kvq_h_sign_l(h), \result);
    complete behaviors;
    disjoint behaviors;
*/
uint8_t kvq_fp8_e4m3_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags);

/*@ requires flags_ok: flags == \null || \valid(flags);
    requires policy: overflow_policy == KVQ_OVERFLOW_SATURATE ||
                     overflow_policy == KVQ_OVERFLOW_NAN;
    assigns *flags;
    behavior nan_in:
      assumes \is_NaN(x);
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures nan_out: \result == (\sign(x) == \Negative ? 255 : 127); // [POL-FP8-03]
    behavior overflow_saturate:
      assumes !\is_NaN(x) && (\is_infinite(x) || kvq_e5m2_ovf_l(x));
      assumes overflow_policy != KVQ_OVERFLOW_NAN;
      ensures max: \result == (\sign(x) == \Negative ? 251 : 123);     // [POL-OV-01]
      ensures flag: flags != \null ==> *flags == kvq_flags_sat_l(\old(*flags));
    behavior overflow_inf:
      assumes !\is_NaN(x) && (\is_infinite(x) || kvq_e5m2_ovf_l(x));
      assumes overflow_policy == KVQ_OVERFLOW_NAN;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures inf_out: \result == (\sign(x) == \Negative ? 252 : 124); // [POL-FP8-03]
    behavior in_range:
      assumes \is_finite(x) && !kvq_e5m2_ovf_l(x);
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures rn: kvq_e5m2_rn_l(x, \sign(x) == \Negative ? 1 : 0, \result);
    complete behaviors;
    disjoint behaviors;
*/
uint8_t kvq_fp8_e5m2_from_f32(float x, uint32_t overflow_policy, uint32_t *flags);

/* h: a binary16 encoding; exactly kvq_fp8_e5m2_from_f32 of its value. */
/*@ requires flags_ok: flags == \null || \valid(flags);
    requires policy: overflow_policy == KVQ_OVERFLOW_SATURATE ||
                     overflow_policy == KVQ_OVERFLOW_NAN;
    assigns *flags;
    behavior nan_in:
      assumes kvq_h_nan_l(h);
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures nan_out: \result == (kvq_h_sign_l(h) == 1 ? 255 : 127);
    behavior overflow_saturate:
      assumes kvq_h_inf_l(h) || (!kvq_h_nan_l(h) && kvq_e5m2_ovf_l(kvq_h_value_l(h)));
      assumes overflow_policy != KVQ_OVERFLOW_NAN;
      ensures max: \result == (kvq_h_sign_l(h) == 1 ? 251 : 123);
      ensures flag: flags != \null ==> *flags == kvq_flags_sat_l(\old(*flags));
    behavior overflow_inf:
      assumes kvq_h_inf_l(h) || (!kvq_h_nan_l(h) && kvq_e5m2_ovf_l(kvq_h_value_l(h)));
      assumes overflow_policy == KVQ_OVERFLOW_NAN;
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures inf_out: \result == (kvq_h_sign_l(h) == 1 ? 252 : 124);
    behavior in_range:
      assumes kvq_h_exp_l(h) < 31 && !kvq_e5m2_ovf_l(kvq_h_value_l(h));
      ensures flags_kept: flags != \null ==> *flags == \old(*flags);
      ensures rn: kvq_e5m2_rn_l(kvq_h_value_l(h), kvq_h_sign_l(h), \result);
    complete behaviors;
    disjoint behaviors;
*/
uint8_t kvq_fp8_e5m2_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_FP8_H */
