/*
 * kvq_mma.h -- parameterised bit-level models of a tensor-core FP8 dot product
 * step, D = A B + C with binary32 C and D, and the tile generator of the
 * accumulator probe (spec/sage.md, "The accumulator").
 *
 * One output of an MMA instruction is d = C + sum_k a_k b_k over K products of
 * FP8 codes (E4M3 or E5M2).  Every product is exact (at most 8 significant
 * bits).  A model says how the hardware sums them:
 *
 *   group     products summed in one step (K / group steps)
 *   pairs     which k a step takes: consecutive runs of `group` (0), or the k
 *             whose pair index k / 2 is the step's index modulo the number of
 *             steps (1)
 *   align     a term's exponent: KVQ_MMA_ALIGN_VALUE floor(log2 |term|);
 *             KVQ_MMA_ALIGN_OPERAND e(a) + e(b) for a product, each operand's
 *             e(x) = max(floor(log2 |x|), emin) (an unnormalised product,
 *             significand in [1, 4)), max(floor(log2), -126) for the running
 *             sum (-126 for a zero, which then always takes part); a zero
 *             operand counts by `zero`
 *   frac      bits kept below a step's largest exponent E: every term of the
 *             step is cut to a multiple of 2^(E - frac)
 *   cut       how a term is cut: KVQ_MMA_CUT_RZ (its magnitude toward zero) or
 *             KVQ_MMA_CUT_FLOOR (toward minus infinity, as a two's-complement
 *             shift)
 *   c_mode    KVQ_MMA_C_INSIDE: the running sum (C before the first step) is a
 *             term of each step; KVQ_MMA_C_AFTER: the step's products are
 *             summed alone, the result added to the running sum by one
 *             binary32 addition rounded by `round`; KVQ_MMA_C_LAST: the steps
 *             start from +0 (inside) and C is added to the last result by one
 *             binary32 addition rounded to nearest even
 *   bits      significand bits (hidden bit included) of each step's result,
 *             24 for binary32; the result is stored as binary32
 *   round     KVQ_MMA_ROUND_RZ or KVQ_MMA_ROUND_RNE: how a step's exact sum
 *             becomes its result
 *
 * A step whose kept sum is exactly zero returns +0, whatever the signs of its
 * terms (measured on an H200, wgmma and mma.sync E4M3 [SAGE-ACC-01]).
 *
 * The sums are exact integers (the terms of one step, scaled by 2^(frac - E),
 * stay below 2^(frac + 2) each, frac <= 48, at most 33 terms), so the model is
 * the same computation on the host and on the device (KVQ_HD).  NaN and
 * infinite inputs are outside the models (the probe draws finite codes only).
 *
 * SPEC: [SAGE-ACC-01..03]
 */
#ifndef KVQ_MMA_H
#define KVQ_MMA_H

#include <stdint.h>

#include "kvq_layout.h"   /* KVQ_HD */

#ifdef __cplusplus
extern "C" {
#endif

#define KVQ_MMA_CUT_RZ    0u
#define KVQ_MMA_CUT_FLOOR 1u
#define KVQ_MMA_C_INSIDE  0u
#define KVQ_MMA_C_AFTER   1u
#define KVQ_MMA_C_LAST    2u
#define KVQ_MMA_ROUND_RZ  0u
#define KVQ_MMA_ROUND_RNE 1u
#define KVQ_MMA_MAX_K     32u
#define KVQ_MMA_MAX_FRAC  48u

#define KVQ_MMA_ALIGN_VALUE   0u  /* a term's exponent: floor(log2 |term|) */
#define KVQ_MMA_ALIGN_OPERAND 1u  /* a product's: e(a) + e(b), e(x) = max(floor(log2 |x|), emin) */
#define KVQ_MMA_ZERO_SKIP     0u  /* a zero product takes no part in the largest exponent */
#define KVQ_MMA_ZERO_M126     1u  /* a zero operand has exponent -126 */

typedef struct kvq_mma_model {
    uint32_t group, frac, cut, c_mode, bits, round;
    uint32_t align;     /* KVQ_MMA_ALIGN_*: which exponent aligns a product */
    int32_t emin;       /* the operands' smallest exponent under ALIGN_OPERAND (-6 E4M3,
                         * -14 E5M2 and binary16) */
    uint32_t zero;      /* KVQ_MMA_ZERO_*, under ALIGN_OPERAND */
    uint32_t pairs;     /* 0: step j takes k = j group .. (j + 1) group - 1; 1: step j
                         * takes the k with (k / 2) % (K / group) == j */
} kvq_mma_model;

/* An exact nonzero value (-1)^neg mag 2^e, or zero (mag == 0). */
typedef struct kvq_mma_term {
    uint32_t neg;
    uint64_t mag;
    int32_t e;
} kvq_mma_term;

/*@ // ---- Logic mirror of the emulator's integer parts, in / % * [SAGE-ACC-01..03] ----
    // 2^k for 0 <= k <= 192 (1 for k <= 0), by cases, not by recursion (the
    // provers evaluate it on constants and never unfold it without end).
    logic integer kvq_mma_p8_l(integer k) =
        k == 0 ? 1 : k == 1 ? 2 : k == 2 ? 4 : k == 3 ? 8 : k == 4 ? 16 :
        k == 5 ? 32 : k == 6 ? 64 : k == 7 ? 128 : 256;
    logic integer kvq_mma_p64_l(integer k) =
        k <= 8 ? kvq_mma_p8_l(k) : k <= 16 ? 0x100 * kvq_mma_p8_l(k - 8) :
        k <= 24 ? 0x10000 * kvq_mma_p8_l(k - 16) : k <= 32 ? 0x1000000 * kvq_mma_p8_l(k - 24) :
        k <= 40 ? 0x100000000 * kvq_mma_p8_l(k - 32) :
        k <= 48 ? 0x10000000000 * kvq_mma_p8_l(k - 40) :
        k <= 56 ? 0x1000000000000 * kvq_mma_p8_l(k - 48) :
        0x100000000000000 * kvq_mma_p8_l(k - 56);
    logic integer kvq_mma_pow2_l(integer k) =
        k <= 0 ? 1 : k <= 64 ? kvq_mma_p64_l(k) :
        k <= 128 ? 0x10000000000000000 * kvq_mma_p64_l(k - 64) :
        0x100000000000000000000000000000000 * kvq_mma_p64_l(k - 128);
    // 2^e as a real, -192 <= e <= 192.
    logic real kvq_mma_pow2r_l(integer e) =
        e >= 0 ? (real)kvq_mma_pow2_l(e) : 1.0 / kvq_mma_pow2_l(-e);
    // The value of a term: (-1)^neg mag 2^e (neg != 0: negative).
    logic real kvq_mma_value_l(integer neg, integer mag, integer e) =
        (neg == 0 ? 1.0 : -1.0) * mag * kvq_mma_pow2r_l(e);

    // An FP8 code x (0 <= x < 256) of format fmt (0 E4M3, else E5M2): its fields
    // S.E.F and the terms of its value (-1)^S mag 2^e [POL-FP8-01..02].
    logic integer kvq_mma_fp8_mb_l(integer fmt) = fmt == 0 ? 3 : 2;
    logic integer kvq_mma_fp8_bias_l(integer fmt) = fmt == 0 ? 7 : 15;
    logic integer kvq_mma_fp8_E_l(integer x, integer fmt) =
        (x % 128) / kvq_mma_pow2_l(kvq_mma_fp8_mb_l(fmt));
    logic integer kvq_mma_fp8_F_l(integer x, integer fmt) = x % kvq_mma_pow2_l(kvq_mma_fp8_mb_l(fmt));
    logic integer kvq_mma_fp8_mag_l(integer x, integer fmt) =
        kvq_mma_fp8_E_l(x, fmt) == 0 ? kvq_mma_fp8_F_l(x, fmt)
                                     : kvq_mma_pow2_l(kvq_mma_fp8_mb_l(fmt)) + kvq_mma_fp8_F_l(x, fmt);
    logic integer kvq_mma_fp8_e_l(integer x, integer fmt) =
        (kvq_mma_fp8_E_l(x, fmt) == 0 ? 1 : kvq_mma_fp8_E_l(x, fmt)) -
        kvq_mma_fp8_bias_l(fmt) - kvq_mma_fp8_mb_l(fmt);

    // A binary32 encoding u (0 <= u < 2^32): fields S.E.F, |x| = mag 2^e.
    logic integer kvq_mma_f32_E_l(integer u) = (u / 8388608) % 256;
    logic integer kvq_mma_f32_F_l(integer u) = u % 8388608;
    logic integer kvq_mma_f32_mag_l(integer u) =
        kvq_mma_f32_E_l(u) == 0 ? kvq_mma_f32_F_l(u) : kvq_mma_f32_F_l(u) + 8388608;
    logic integer kvq_mma_f32_e_l(integer u) = (kvq_mma_f32_E_l(u) == 0 ? 1 : kvq_mma_f32_E_l(u)) - 150;

    // mag 2^e below 2^q: its part under 2^q in units of 2^e (mag itself when
    // 2^(q-e) >= 2^64 > mag), and the whole multiples of 2^q in it, floor(mag 2^(e-q)).
    logic integer kvq_mma_low_l(integer mag, integer e, integer q) =
        e >= q ? 0 : q - e >= 64 ? mag : mag % kvq_mma_pow2_l(q - e);
    logic integer kvq_mma_whole_l(integer mag, integer e, integer q) =
        e >= q ? mag * kvq_mma_pow2_l(e - q) : q - e >= 64 ? 0 : mag / kvq_mma_pow2_l(q - e);
    // (-1)^neg mag 2^e as n 2^q, cut toward zero (cut != 1) or toward minus
    // infinity (cut == KVQ_MMA_CUT_FLOOR == 1) [SAGE-ACC-01].
    logic integer kvq_mma_cut_l(integer neg, integer mag, integer e, integer q, integer cut) =
        neg == 0 ? kvq_mma_whole_l(mag, e, q) :
        cut == 1 && kvq_mma_low_l(mag, e, q) != 0 ? -kvq_mma_whole_l(mag, e, q) - 1
                                                  : -kvq_mma_whole_l(mag, e, q);

    // Facts about 2^k on a finite domain, decided by enumerating it
    // (proofs/mma_enum.c, proofs/TRUSTED.md [TR-LEMMA-ENUM]).
    lemma kvq_mma_pow2_pos: \forall integer k; 0 <= k <= 127 ==> kvq_mma_pow2_l(k) >= 1;
    lemma kvq_mma_pow2_succ: \forall integer k; 0 <= k <= 126 ==>
        kvq_mma_pow2_l(k + 1) == 2 * kvq_mma_pow2_l(k);
    lemma kvq_mma_pow2_add: \forall integer a, b; 0 <= a <= 63 && 0 <= b <= 63 ==>
        kvq_mma_pow2_l(a + b) == kvq_mma_pow2_l(a) * kvq_mma_pow2_l(b);
    lemma kvq_mma_pow2_mono: \forall integer a, b; 0 <= a < b <= 127 ==>
        2 * kvq_mma_pow2_l(a) <= kvq_mma_pow2_l(b);
    // Integer division by a positive p (p stands for 2^k; proved by WP).
    lemma kvq_mma_div_one: \forall integer v, p; 0 <= v && 1 <= p && v / p == 1 ==>
        p <= v < 2 * p;
    lemma kvq_mma_div_half: \forall integer v, p; 0 <= v && 2 <= p ==> 2 * (v / p) <= v;

    lemma kvq_mma_pow2_63: kvq_mma_pow2_l(63) == 0x8000000000000000 &&
        kvq_mma_pow2_l(64) == 0x10000000000000000;
    // 1 << k, the power of two below and cut divide by (64 cases, enumerated).
    lemma kvq_mma_shl1: \forall integer k; 0 <= k <= 63 ==> (1 << k) == kvq_mma_pow2_l(k);

    // C's shifts and masks on non-negative integers (C11 6.5.7, ACSL 2.2.4:
    // x << k == x 2^k, x >> k == floor(x / 2^k)), for the 64-bit shift counts
    // the emulator uses.  WP's bit theory cannot derive them and x ranges over
    // 2^64 values, so they are accepted, not enumerated (proofs/TRUSTED.md
    // [TR-GOAL-MMA-SHIFT]); proofs/mma_enum.c checks them on a sample.
    lemma kvq_mma_shl: \forall integer x, k; 0 <= x && 0 <= k <= 63 ==>
        (x << k) == x * kvq_mma_pow2_l(k);
    lemma kvq_mma_shr: \forall integer x, k; 0 <= x && 0 <= k <= 63 ==>
        (x >> k) == x / kvq_mma_pow2_l(k);
    lemma kvq_mma_mask: \forall integer x, k; 0 <= x && 0 <= k <= 63 ==>
        (x & (kvq_mma_pow2_l(k) - 1)) == x % kvq_mma_pow2_l(k) &&
        ((kvq_mma_pow2_l(k) - 1) & x) == x % kvq_mma_pow2_l(k);
*/

/* The exact value of FP8 code x (fmt 0 E4M3, 1 E5M2); the code is finite. */
/*@ requires code: x < 256;
    assigns \nothing;
    ensures neg: \result.neg == x / 128;                          // [POL-FP8-01..02]
    ensures mag: \result.mag == kvq_mma_fp8_mag_l(x, fmt);
    ensures e: \result.e == kvq_mma_fp8_e_l(x, fmt);
    ensures range: \result.mag <= 15 && -16 <= \result.e <= 14;
*/
KVQ_HD static inline kvq_mma_term kvq_mma_fp8_term(uint32_t x, uint32_t fmt)
{
    kvq_mma_term t;
    const uint32_t mb = fmt ? 2u : 3u, bias = fmt ? 15u : 7u;
    const uint32_t lead = fmt ? 4u : 8u;                      /* 2^mb, the hidden one */
    const uint32_t E = (x % 128u) / lead, m = x % lead;
    t.neg = x / 128u;
    t.mag = E ? (uint64_t)(lead + m) : (uint64_t)m;
    t.e = (E ? (int32_t)E : 1) - (int32_t)bias - (int32_t)mb;
    return t;
}

/* The exact value of binary32 u (finite; an infinity or NaN gives the
 * fields' value as if E were a finite exponent). */
/*@ assigns \nothing;
    ensures neg: \result.neg == u / 0x80000000;
    ensures mag: \result.mag == kvq_mma_f32_mag_l(u);
    ensures e: \result.e == kvq_mma_f32_e_l(u);
    ensures range: \result.mag < 0x1000000 && -149 <= \result.e <= 105;
*/
KVQ_HD static inline kvq_mma_term kvq_mma_f32_term(uint32_t u)
{
    kvq_mma_term t;
    /* the fields in / %: the same as (u >> 23) & 0xFF, u & 0x7FFFFF, u >> 31 */
    const uint32_t E = (u / 0x800000u) % 256u, f = u % 0x800000u;
    t.neg = u / 0x80000000u;
    t.mag = E ? (uint64_t)f + 0x800000u : (uint64_t)f;
    t.e = (E ? (int32_t)E : 1) - 150;
    return t;
}

/* The bit length of v: 2^(r-1) <= v < 2^r, 0 for v = 0. */
/*@ assigns \nothing;
    ensures zero: v == 0 ==> \result == 0;
    ensures bitlen: v != 0 ==> 1 <= \result <= 64 &&
        kvq_mma_pow2_l(\result - 1) <= v < kvq_mma_pow2_l(\result);
*/
KVQ_HD static inline int32_t kvq_mma_bitlen(uint64_t v)
{
#ifdef __CUDA_ARCH__
    return 64 - __clzll((long long)v);
#else
    if (v == 0u) return 0;
    const int32_t c = __builtin_clzll(v);                     /* v's leading one is bit 63 - c */
    //@ assert shr: v / kvq_mma_pow2_l(63 - c) == 1 && kvq_mma_pow2_l(63 - c) >= 1;
    //@ assert lead: kvq_mma_pow2_l(63 - c) <= v < 2 * kvq_mma_pow2_l(63 - c);
    //@ assert succ: kvq_mma_pow2_l(64 - c) == 2 * kvq_mma_pow2_l(63 - c);
    return 64 - c;
#endif
}

/* floor(log2 |t|) of a nonzero term. */
/*@ requires nonzero: t.mag != 0;
    requires e_range: -0x10000000 <= t.e <= 0x10000000;
    assigns \nothing;
    ensures top: t.e <= \result <= t.e + 63 &&
        kvq_mma_pow2_l(\result - t.e) <= t.mag < kvq_mma_pow2_l(\result - t.e + 1);
*/
KVQ_HD static inline int32_t kvq_mma_top(kvq_mma_term t) { return t.e + kvq_mma_bitlen(t.mag) - 1; }

/* Whether t has nonzero bits below 2^q. */
/*@ requires range: -0x10000000 <= q <= 0x10000000 && -0x10000000 <= t.e <= 0x10000000;
    assigns \nothing;
    ensures below: \result != 0 <==> kvq_mma_low_l(t.mag, t.e, q) != 0;
    ensures bool: \result == 0 || \result == 1;
*/
KVQ_HD static inline int kvq_mma_below(kvq_mma_term t, int32_t q)
{
    if (t.e >= q || t.mag == 0u) return 0;
    const uint32_t sh = (uint32_t)(q - t.e);
    //@ assert sh: sh == q - t.e;
    if (sh >= 64u) return 1;                                  /* t.mag < 2^64 <= 2^sh */
    /* % and / by the power of two p are what compilers emit as & and >> */
    const uint64_t p = ((uint64_t)1) << sh;
    //@ assert p: p == kvq_mma_pow2_l(sh) && p >= 2;
    return t.mag % p != 0u;
}

/* t as a multiple of 2^q, cut by `cut`: a signed integer n with n 2^q the cut
 * value.  |t| < 2^(q + 63) (the cut fits int64) is the caller's. */
/*@ requires range: -0x10000000 <= q <= 0x10000000 && -0x10000000 <= t.e <= 0x10000000;
    requires fits: t.mag != 0 && t.e >= q ==>
        t.e - q <= 62 && 0 <= t.mag * kvq_mma_pow2_l(t.e - q) <= 0x7FFFFFFFFFFFFFFF;
    assigns \nothing;
    ensures cut: \result == kvq_mma_cut_l(t.neg, t.mag, t.e, q, cut);   // [SAGE-ACC-01]
    ensures small: t.e < q ==> -t.mag <= \result <= t.mag;
*/
KVQ_HD static inline int64_t kvq_mma_cut(kvq_mma_term t, int32_t q, uint32_t cut)
{
    if (t.mag == 0u) {
        //@ assert zero_pow2: t.e < q && q - t.e < 64 ==> kvq_mma_pow2_l(q - t.e) >= 1;
        //@ assert zero_parts: kvq_mma_whole_l(0, t.e, q) == 0 && kvq_mma_low_l(0, t.e, q) == 0;
        //@ assert zero: 0 == kvq_mma_cut_l(t.neg, t.mag, t.e, q, cut);
        return 0;
    }
    if (t.e >= q) {
        const uint32_t k = (uint32_t)(t.e - q);
        //@ assert k: k == t.e - q && k <= 62;
        const uint64_t p = ((uint64_t)1) << k;
        //@ assert p: p == kvq_mma_pow2_l(k);
        /* the precondition fits: the conversion to int64_t keeps the product */
        //@ assert v_fits: 0 <= t.mag * p <= 0x7FFFFFFFFFFFFFFF;
        const int64_t v = (int64_t)(t.mag * p);
        //@ assert v: v == kvq_mma_whole_l(t.mag, t.e, q) && kvq_mma_low_l(t.mag, t.e, q) == 0;
        if (t.neg) {
            //@ assert exact_neg: -v == kvq_mma_cut_l(t.neg, t.mag, t.e, q, cut);
            return -v;
        }
        //@ assert exact_pos: v == kvq_mma_cut_l(t.neg, t.mag, t.e, q, cut);
        return v;
    }
    const uint32_t sh = (uint32_t)(q - t.e);
    //@ assert sh: sh == q - t.e;
    const uint64_t whole = sh >= 64u ? 0u : t.mag / (((uint64_t)1) << sh);
    //@ assert p: sh < 64 ==> kvq_mma_pow2_l(sh) >= 2;
    //@ assert whole: whole == kvq_mma_whole_l(t.mag, t.e, q) && 2 * whole <= t.mag;
    const int64_t w = (int64_t)whole;                         /* whole < 2^63 */
    //@ assert w: w == kvq_mma_whole_l(t.mag, t.e, q) && 0 <= w <= 0x7FFFFFFFFFFFFFFF;
    if (!t.neg) {
        //@ assert pos: w == kvq_mma_cut_l(t.neg, t.mag, t.e, q, cut);
        return w;
    }
    if (cut == KVQ_MMA_CUT_FLOOR && kvq_mma_below(t, q)) {
        //@ assert floor: -w - 1 == kvq_mma_cut_l(t.neg, t.mag, t.e, q, cut);
        return -w - 1;
    }
    //@ assert toward_zero: -w == kvq_mma_cut_l(t.neg, t.mag, t.e, q, cut);
    return -w;
}

/* n 2^q rounded to `bits` significand bits and to binary32 (subnormals,
 * overflow to infinity under RNE, to the largest finite under RZ); an exact
 * zero is +0, whatever the signs of the terms that summed to it (the
 * hardware's sum is an integer; measured on an H200 [SAGE-ACC-01]). */
/*@ requires q_range: -0x1000000 <= q <= 0x1000000;
    requires bits: 1 <= bits <= 24;
    assigns \nothing;
    ensures zero: n == 0 ==> \result == 0;
*/
KVQ_HD static inline uint32_t kvq_mma_to_f32(int64_t n, int32_t q, uint32_t bits, uint32_t round)
{
    if (n == 0) return 0u;
    const uint32_t neg = n < 0;
    uint64_t m = neg ? (uint64_t)(-(n + 1)) + 1u : (uint64_t)n;
    int32_t top = q + kvq_mma_bitlen(m) - 1;                 /* floor(log2 |v|) */
    /* the quantum: 2^(top - bits + 1), not below binary32's 2^-149 */
    int32_t lsb = top - (int32_t)bits + 1;
    if (lsb < -149) lsb = -149;
    uint64_t keep;
    if (lsb <= q) {
        keep = m << (uint32_t)(q - lsb);
    } else {
        const uint32_t sh = (uint32_t)(lsb - q);
        const uint64_t rem = sh >= 64u ? m : m & ((((uint64_t)1) << sh) - 1u);
        keep = sh >= 64u ? 0u : m >> sh;
        if (round == KVQ_MMA_ROUND_RNE && sh <= 64u) {
            const uint64_t half = ((uint64_t)1) << (sh - 1u);
            if (rem > half || (rem == half && (keep & 1u))) keep++;
        }
    }
    if (keep == 0u) return neg ? 0x80000000u : 0u;
    /* value keep 2^lsb; renormalise a carry */
    int32_t kt = lsb + kvq_mma_bitlen(keep) - 1;
    if (kt > 127) return (neg ? 0x80000000u : 0u) | (round == KVQ_MMA_ROUND_RNE ? 0x7F800000u : 0x7F7FFFFFu);
    uint32_t bitsf;
    if (kt < -126) {                                          /* subnormal: keep 2^lsb, lsb >= -149 */
        /* keep has kt - lsb + 1 <= 23 bits (kt <= -127, lsb >= -149), so the
         * conversion keeps it; the field keep 2^(lsb + 149) < 2^(kt + 150) <= 2^23
         * fits the 32-bit shift */
        //@ assert sub_bits: 1 <= kt - lsb + 1 <= 23 && 0 <= lsb + 149 <= 22;
        //@ assert sub_len: kvq_mma_pow2_l(kt - lsb + 1) <= kvq_mma_pow2_l(23);
        //@ assert keep24: keep < 0x1000000;
        bitsf = (uint32_t)keep << (uint32_t)(lsb + 149);
    } else {
        /* 24 bits, hidden one first; a carry of a 24-bit keep (bits == 24, RNE)
         * makes keep == 2^24, kt - lsb == 24: shift it right, not by -1 */
        const uint64_t sig = kt - lsb <= 23 ? keep << (uint32_t)(23 - (kt - lsb)) : keep >> 1;
        bitsf = ((uint32_t)(kt + 127) << 23) | (uint32_t)(sig & 0x7FFFFFu);
    }
    return (neg ? 0x80000000u : 0u) | bitsf;
}

/* u + v, binary32 bits, one addition rounded by `round` (an exact zero sum is
 * +0 unless both are -0).  Both are summed as multiples of 2^q, q no lower
 * than 40 bits below the larger one's top; what a smaller operand has below
 * 2^q is replaced by half a unit 2^(q-1) of its sign, which lies strictly
 * between the same binary32 neighbours as the exact sum (every rounding
 * boundary is a multiple of 2^(q+16)), so the rounding is the exact sum's. */
/*@ assigns \nothing; */
KVQ_HD static inline uint32_t kvq_mma_add_f32(uint32_t u, uint32_t v, uint32_t round)
{
    const kvq_mma_term x = kvq_mma_f32_term(u), y = kvq_mma_f32_term(v);
    if (x.mag == 0u && y.mag == 0u) return (u & v) & 0x80000000u;
    if (x.mag == 0u) return v;
    if (y.mag == 0u) return u;
    const int32_t tx = kvq_mma_top(x), ty = kvq_mma_top(y);
    int32_t q = x.e < y.e ? x.e : y.e;
    const int32_t floor_q = (tx > ty ? tx : ty) - 40;
    if (q < floor_q) q = floor_q;
    int64_t sum = 2 * (kvq_mma_cut(x, q, KVQ_MMA_CUT_RZ) + kvq_mma_cut(y, q, KVQ_MMA_CUT_RZ));
    if (kvq_mma_below(x, q)) sum += x.neg ? -1 : 1;             /* x has bits below 2^q */
    if (kvq_mma_below(y, q)) sum += y.neg ? -1 : 1;
    return kvq_mma_to_f32(sum, q - 1, 24u, round);
}

/* One output under model m: c (binary32 bits) plus the K products a[k] b[k]
 * of FP8 codes of format fmt.  Returns the binary32 bits. */
/*@ requires K: K <= KVQ_MMA_MAX_K;
    requires codes: \valid_read(a + (0 .. K - 1)) && \valid_read(b + (0 .. K - 1));
    requires model: \valid_read(m) && 1 <= m->group <= KVQ_MMA_MAX_K &&
        m->frac <= KVQ_MMA_MAX_FRAC && 1 <= m->bits <= 24 && -149 <= m->emin <= 0;
    assigns \nothing;
*/
KVQ_HD static inline uint32_t kvq_mma_dot(const uint8_t *a, const uint8_t *b, uint32_t K, uint32_t c,
                                          uint32_t fmt, const kvq_mma_model *m)
{
    uint32_t acc = m->c_mode == KVQ_MMA_C_LAST ? 0u : c;
    const uint32_t nsteps = (K + m->group - 1u) / m->group;
    for (uint32_t st = 0; st < nsteps; st++) {
        kvq_mma_term t[KVQ_MMA_MAX_K + 1];
        int32_t ae[KVQ_MMA_MAX_K + 1];                        /* alignment exponents; -100000: none */
        uint32_t nt = 0;
        const int op = m->align == KVQ_MMA_ALIGN_OPERAND;
        if (m->c_mode != KVQ_MMA_C_AFTER) {
            t[nt] = kvq_mma_f32_term(acc);
            ae[nt] = t[nt].mag ? kvq_mma_top(t[nt]) : (op ? -126 : -100000);
            if (op && ae[nt] < -126) ae[nt] = -126;
            nt++;
        }
        for (uint32_t k = 0; k < K; k++) {
            if (m->pairs ? (k / 2u) % nsteps != st : k / m->group != st) continue;
            const kvq_mma_term x = kvq_mma_fp8_term(a[k], fmt), y = kvq_mma_fp8_term(b[k], fmt);
            kvq_mma_term p;
            p.neg = x.neg ^ y.neg;
            p.mag = x.mag * y.mag;
            p.e = x.e + y.e;
            if (!op) {
                ae[nt] = p.mag ? kvq_mma_top(p) : -100000;
            } else if (p.mag == 0u && m->zero == KVQ_MMA_ZERO_SKIP) {
                ae[nt] = -100000;
            } else {
                int32_t ex = x.mag ? kvq_mma_top(x) : -126, ey = y.mag ? kvq_mma_top(y) : -126;
                if (x.mag && ex < m->emin) ex = m->emin;
                if (y.mag && ey < m->emin) ey = m->emin;
                ae[nt] = ex + ey;
            }
            t[nt++] = p;
        }
        int32_t emax = -100000;
        for (uint32_t i = 0; i < nt; i++)
            if (ae[i] > emax) emax = ae[i];
        uint32_t r = 0u;                                      /* every term a zero: +0 */
        if (emax != -100000) {
            const int32_t q = emax - (int32_t)m->frac;
            int64_t s = 0;
            for (uint32_t i = 0; i < nt; i++) s += kvq_mma_cut(t[i], q, m->cut);
            r = kvq_mma_to_f32(s, q, m->bits, m->round);     /* a zero kept sum: +0 */
        }
        acc = m->c_mode == KVQ_MMA_C_AFTER ? kvq_mma_add_f32(acc, r, m->round) : r;
    }
    if (m->c_mode == KVQ_MMA_C_LAST) acc = kvq_mma_add_f32(acc, c, KVQ_MMA_ROUND_RNE);
    return acc;
}

/* ---- the models the probe confirmed on an H100 (spec/sage.md [SAGE-ACC-02]) ---- */

/* wgmma m64nNk32 with E4M3/E5M2 operands and a binary32 accumulator: one step
 * of all 32 products and C, aligned at the operands' exponents (the format's
 * own emin for subnormals), every term cut toward zero at 13 fraction bits,
 * the exact sum cut toward zero to 14 significant bits. */
KVQ_HD static inline kvq_mma_model kvq_mma_model_wgmma_fp8(uint32_t fmt)
{
    kvq_mma_model m = {32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 14u, KVQ_MMA_ROUND_RZ,
                       KVQ_MMA_ALIGN_OPERAND, fmt ? -14 : -6, KVQ_MMA_ZERO_SKIP, 0u};
    return m;
}

/* mma.sync m16n8k32 with E4M3/E5M2 operands on sm_90 as CUDA 13 compiles it:
 * the codes unpacked to binary16 (exact), two HMMA.16816 steps from +0 (the
 * first takes k = 0, 1 mod 4, the second k = 2, 3 mod 4), each aligning its 16
 * products and the running sum at the operands' binary16 exponents, cutting
 * toward zero at 25 fraction bits and the sum toward zero to binary32; then C
 * added by one binary32 addition (FADD, to nearest even). */
KVQ_HD static inline kvq_mma_model kvq_mma_model_mma_fp8_sm90(void)
{
    kvq_mma_model m = {16u, 25u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_LAST, 24u, KVQ_MMA_ROUND_RZ,
                       KVQ_MMA_ALIGN_OPERAND, -14, KVQ_MMA_ZERO_SKIP, 1u};
    return m;
}

/* The common truncation description of the FP8 accumulator (from later public
 * work, not from SageAttention2): every term, C included, aligned to the
 * largest term's own exponent, cut toward zero at 2^(emax - 13), the exact sum
 * cut toward zero to binary32.  Not a measured model: on random wgmma tiles it
 * reproduces about 76% (E4M3) and 88% (E5M2) of the outputs [SAGE-ACC-02];
 * named so that a kernel, or a vector, can be judged against it. */
KVQ_HD static inline kvq_mma_model kvq_mma_model_truncation_common(void)
{
    kvq_mma_model m = {32u, 13u, KVQ_MMA_CUT_RZ, KVQ_MMA_C_INSIDE, 24u, KVQ_MMA_ROUND_RZ,
                       KVQ_MMA_ALIGN_VALUE, 0, KVQ_MMA_ZERO_SKIP, 0u};
    return m;
}

/* ---- the probe's tiles ------------------------------------------------------ */

#define KVQ_MMA_DIST_UNIFORM 0u  /* every finite code equally likely */
#define KVQ_MMA_DIST_NARROW  1u  /* exponent fields in a window of 4: products of like size */
#define KVQ_MMA_DIST_CANCEL  2u  /* pairs a_k b_k = -a_(k+1) b_(k+1) up to the last bits */
#define KVQ_MMA_DIST_CBIG    3u  /* C 2^0 .. 2^24 above the largest product */
#define KVQ_MMA_DIST_CSMALL  4u  /* C 2^0 .. 2^40 below the products, or a zero */
#define KVQ_MMA_DIST_EXACT   5u  /* small integers: every model exact (a layout check) */
#define KVQ_MMA_DIST_SUBNORMAL 6u /* every A operand a nonzero subnormal: its alignment decides E */
#define KVQ_MMA_NDIST        7u

KVQ_HD static inline uint64_t kvq_mma_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The random word of (seed, tile, slot): slot names one element of the tile. */
KVQ_HD static inline uint64_t kvq_mma_rnd(uint64_t seed, uint64_t tile, uint32_t slot)
{
    return kvq_mma_mix(seed ^ kvq_mma_mix(tile * 0x100000001B3ull + slot));
}

/* A finite FP8 code from r, exponent field limited to [elo, ehi]. */
KVQ_HD static inline uint8_t kvq_mma_code(uint64_t r, uint32_t fmt, uint32_t elo, uint32_t ehi)
{
    const uint32_t mb = fmt ? 2u : 3u;
    const uint32_t E = elo + (uint32_t)((r >> 8) % (ehi - elo + 1u));
    uint32_t m = (uint32_t)(r >> 20) % (1u << mb);
    if (!fmt && E == 15u && m == 7u) m = 6u;                  /* E4M3 NaN */
    return (uint8_t)((uint32_t)(r & 1u) * 128u + E * (1u << mb) + m);
}

/* Element (row, k) of A (which 0) or (k, col) of B (which 1), and C (which 2,
 * (row, col)), of tile `tile` under distribution dist.  Tiles are at most
 * 64 x 32 (A), 32 x 8 (B), 64 x 8 (C). */
KVQ_HD static inline uint32_t kvq_mma_tile_elem(uint64_t seed, uint64_t tile, uint32_t dist, uint32_t fmt,
                                               uint32_t which, uint32_t i, uint32_t j)
{
    const uint32_t emax = fmt ? 30u : 15u;                    /* largest finite exponent field */
    const uint64_t r = kvq_mma_rnd(seed, tile, which * 4096u + i * 64u + j);
    const uint64_t tr = kvq_mma_rnd(seed, tile, 0xFFFFFu);    /* per tile */
    if (which == 2u) {                                         /* C */
        const uint32_t sign = (uint32_t)(r & 1u) << 31;
        int32_t e;                                             /* binary32 exponent field */
        if (dist == KVQ_MMA_DIST_EXACT) {
            return sign | ((uint32_t)(127 + (int32_t)((r >> 4) % 4u)) << 23) |
                   ((uint32_t)((r >> 8) % 8u) << 20);
        }
        const int32_t pmax = fmt ? 2 * 15 + 2 : 2 * 8 + 2;     /* about the largest product's exponent */
        if (dist == KVQ_MMA_DIST_CBIG) e = 127 + pmax + (int32_t)((r >> 4) % 25u);
        else if (dist == KVQ_MMA_DIST_SUBNORMAL) e = 127 + 2 - (int32_t)((r >> 4) % 25u); /* 2^-22 .. 2^2 */
        else if (dist == KVQ_MMA_DIST_CSMALL) {
            if ((r >> 60) == 0u) return sign;                  /* a signed zero, 1 in 16 */
            e = 127 - (int32_t)((r >> 4) % 41u) + (fmt ? -20 : -10);
        } else e = 127 + (int32_t)((r >> 4) % (uint32_t)(2 * pmax + 1)) - pmax;
        if (e < 1) e = 1;
        return sign | ((uint32_t)e << 23) | (uint32_t)((r >> 32) & 0x7FFFFFu);
    }
    switch (dist) {
    case KVQ_MMA_DIST_SUBNORMAL:
        /* A: exponent field 0, a nonzero fraction, either sign; B: any finite
         * code.  Every product's alignment exponent is then that of a
         * subnormal A, e(a) = emin (-6 E4M3, -14 E5M2) or a's own exponent
         * (down to -9 or -16): the two readings cut C and the smaller products
         * at different bits [SAGE-ACC-02] */
        if (which == 0u) {
            const uint32_t mb = fmt ? 2u : 3u;
            return (uint32_t)(r & 1u) * 128u + 1u + (uint32_t)((r >> 8) % ((1u << mb) - 1u));
        }
        return kvq_mma_code(r, fmt, 0u, emax);
    case KVQ_MMA_DIST_NARROW: {
        const uint32_t lo = 1u + (uint32_t)(tr % (emax - 3u));
        return kvq_mma_code(r, fmt, lo, lo + 3u);
    }
    case KVQ_MMA_DIST_CANCEL: {
        /* odd k repeats the even k's magnitudes with the sign of a flipped, and
         * with a low mantissa bit changed one time in four */
        const uint32_t k = which == 0u ? j : i, k0 = k & ~1u;
        const uint64_t r0 = kvq_mma_rnd(seed, tile, which * 4096u + (which == 0u ? i * 64u + k0 : k0 * 64u + j));
        uint32_t x = kvq_mma_code(r0, fmt, 1u, emax);
        if (k & 1u) {
            if (which == 0u) x ^= 128u;
            if (((r >> 40) & 3u) == 0u) x ^= 1u;
            if (!fmt && (x & 127u) == 127u) x ^= 1u;
        }
        return x;
    }
    case KVQ_MMA_DIST_EXACT: {                                 /* +-1 .. +-8 (4 bits of significand) */
        const uint32_t v = 1u + (uint32_t)((r >> 8) % 8u);
        const uint32_t mb = fmt ? 2u : 3u, bias = fmt ? 15u : 7u;
        uint32_t s = 3u;                                       /* 2^s <= v < 2^(s+1) */
        while ((v >> s) == 0u) s--;
        const uint32_t E = bias + s, mm = ((v << mb) >> s) % (1u << mb); /* exact: v < 16 */
        return (uint32_t)(r & 1u) * 128u + E * (1u << mb) + mm;
    }
    default:
        return kvq_mma_code(r, fmt, 0u, emax);
    }
}

/* The operands of output (r, c) of a tile: row r of A, column c of B, C. */
KVQ_HD static inline uint32_t kvq_mma_tile_output(uint64_t seed, uint64_t tile, uint32_t dist, uint32_t fmt,
                                                  uint32_t r, uint32_t c, uint8_t a[KVQ_MMA_MAX_K],
                                                  uint8_t b[KVQ_MMA_MAX_K])
{
    for (uint32_t k = 0; k < KVQ_MMA_MAX_K; k++) {
        a[k] = (uint8_t)kvq_mma_tile_elem(seed, tile, dist, fmt, 0u, r, k);
        b[k] = (uint8_t)kvq_mma_tile_elem(seed, tile, dist, fmt, 1u, k, c);
    }
    return kvq_mma_tile_elem(seed, tile, dist, fmt, 2u, r, c);
}

#ifdef __cplusplus
}
#endif
#endif /* KVQ_MMA_H */
