/*
 * libm_spec.h -- proofs only: the libm contracts the WP runs of ref/fast/kivi.c,
 * ref/fast/cert.c, ref/fast/sage.c and the FP8 module rely on.  proofs/run.sh force-includes this file (gcc -include) before
 * every source; defining __FC_MATH keeps Frama-C's own <math.h> out, so these
 * are the only math declarations the proof sees.  Never used by a build.
 *
 * Every contract below is an ASSUMPTION (it is not proved: the bodies are the
 * platform's libm).  Each one is listed in proofs/TRUSTED.md [TR-LIBM-*] with
 * what backs it.  They state only what C11 Annex F (IEC 60559) requires of
 * these functions on finite arguments; nothing about errno (the fast path never
 * reads errno, and with Annex F none of these functions sets it on finite input).
 */
#ifndef KVQ_PROOFS_LIBM_SPEC_H
#define KVQ_PROOFS_LIBM_SPEC_H

#define __FC_MATH 1 /* the include guard of Frama-C's libc math.h */

/* [TR-LIBM-FLOOR] floorf is exact (F.10.6.2): the largest integer <= x. */
/*@ requires finite_arg: \is_finite(x);
    assigns \nothing;
    ensures finite_result: \is_finite(\result);
    ensures floor: \result == \floor(x);
*/
extern float floorf(float x);

/* [TR-LIBM-FABS] fabsf is exact (F.10.4.2). */
/*@ assigns \nothing;
    ensures finite: \is_finite(x) ==> \is_finite(\result) && \result == \abs(x);
    ensures infinite: \is_infinite(x) ==> \is_plus_infinity(\result);
    ensures nan: \is_NaN(x) ==> \is_NaN(\result);
*/
extern float fabsf(float x);

/* [TR-LIBM-FABS] fabs (binary64), exact (F.10.4.2): declared for the SAGE
 * metrics, which are outside the WP scope; no proved goal uses it. */
/*@ assigns \nothing;
    ensures finite: \is_finite(x) ==> \is_finite(\result) && \result == \abs(x);
*/
extern double fabs(double x);

/* [TR-LIBM-COPYSIGN] copysignf(x, y): |x| with the sign of y (F.10.8.1). */
/*@ assigns \nothing;
    ensures finite: \is_finite(x) ==> \is_finite(\result);
    ensures magnitude: \is_finite(x) ==> \result == \abs(x) || \result == -\abs(x);
    ensures positive: \is_finite(x) && \is_finite(y) && y > 0 ==> \result == \abs(x);
    ensures negative: \is_finite(x) && \is_finite(y) && y < 0 ==> \result == -\abs(x);
    ensures inf_positive: \is_finite(x) && \is_plus_infinity(y) ==> \result == \abs(x);
    ensures inf_negative: \is_finite(x) && \is_minus_infinity(y) ==> \result == -\abs(x);
*/
extern float copysignf(float x, float y);

/* [TR-LIBM-LDEXP] ldexpf(x, e) = x * 2^e, exact when the product is a normal
 * binary32 or zero (F.10.3.6); the fast path only calls it in that case.  The
 * contract gives the bounds the callers need, for a scaling into [0, 2^31). */
/*@ requires finite_arg: \is_finite(x);
    assigns \nothing;
    ensures finite_result: -0x1p31 < x * 0x1p24 < 0x1p31 && e == 24 ==> \is_finite(\result);
    ensures scaled_24: -0x1p31 < x * 0x1p24 < 0x1p31 && e == 24 ==> \result == x * 0x1p24;
    ensures sign: x >= 0 ==> \result >= 0;
    ensures scaled_24_wide: -0x1p62 < x * 0x1p24 < 0x1p62 && e == 24 ==> \result == x * 0x1p24;
*/
extern float ldexpf(float x, int e);

/* 2^k for 0 <= k <= 255, as the product of 2^(2^i) over the bits i of k (no
 * recursion: at a constant k every prover evaluates it). */
/*@ logic integer kvq_libm_p2_l(integer k) =
        (k % 2 == 1 ? 2 : 1) * ((k / 2) % 2 == 1 ? 4 : 1) * ((k / 4) % 2 == 1 ? 16 : 1) *
        ((k / 8) % 2 == 1 ? 256 : 1) * ((k / 16) % 2 == 1 ? 65536 : 1) *
        ((k / 32) % 2 == 1 ? 0x100000000 : 1) *
        ((k / 64) % 2 == 1 ? 0x10000000000000000 : 1) *
        ((k / 128) % 2 == 1 ? 0x100000000000000000000000000000000 : 1);
*/

/* [TR-LIBM-FREXP] frexpf: x = m * 2^e, 1/2 <= |m| < 1 for finite non-zero x (F.10.3.4).
 * The exponent, stated without m: 2^(e-1) <= |x| < 2^e, that is |x| >= 2^k
 * exactly when e > k, for every k of the binary32 range. */
/*@ requires finite_arg: \is_finite(x);
    requires valid_exp: \valid(e);
    assigns *e;
    ensures finite_result: \is_finite(\result);
    ensures exponent_range: x != 0 ==> -148 <= *e <= 128;
    ensures mantissa_pos: x > 0 ==> 0.5 <= \result < 1;
    ensures exponent_up: x != 0 ==> \forall integer k; 0 <= k <= 128 ==>
        (\abs(x) >= kvq_libm_p2_l(k) <==> *e > k);
    ensures exponent_down: x != 0 ==> \forall integer k; 1 <= k <= 149 ==>
        (\abs(x) * kvq_libm_p2_l(k) >= 1 <==> *e > -k);
*/
extern float frexpf(float x, int *e);

/* [TR-LIBM-FMA] fmaf(x, y, z) = RN32(x*y + z), one rounding (F.10.10.1). */
/*@ assigns \nothing;
    ensures finite_args: \is_finite(x) && \is_finite(y) && \is_finite(z) ==> !\is_NaN(\result);
    // Rounding to nearest is monotone and 2^20 is a binary32 number, so an exact
    // x*y + z within [-2^20, 2^20] rounds into it (the CERT value reconstruction).
    ensures within_2_20: \is_finite(x) && \is_finite(y) && \is_finite(z) &&
        -0x1p20 <= x * y + z <= 0x1p20 ==> \is_finite(\result) && -0x1p20 <= \result <= 0x1p20;
*/
extern float fmaf(float x, float y, float z);

/* [TR-LIBM-NEXTAFTER] nextafterf(x, y): the neighbour of x toward y (F.10.8.3);
 * the CERT path uses it only to step a rounded bound up.  Nothing beyond
 * "no side effect" is needed by the proved goals. */
/*@ assigns \nothing;
    ensures up: \is_finite(x) && x < 0x1p127 && \is_plus_infinity(y) ==>
        \is_finite(\result) && \result > x;
    ensures up_double: \is_finite(x) && 0x1p-125 <= x < 0x1p127 && \is_plus_infinity(y) ==>
        \result <= 2 * x;
    ensures down: \is_finite(x) && x >= 0x1p-125 && \is_finite(y) && y < x ==>
        \is_finite(\result) && x / 2 <= \result < x;
*/
extern float nextafterf(float x, float y);

/* [TR-LIBM-SQRT] sqrt: only a candidate in the CERT path (the result is then
 * decided by exact integer comparisons); assumed: 1 <= x <= 2^128 gives
 * 1 <= sqrt(x) <= 2^64 (F.10.4.5: correctly rounded, hence monotone). */
/*@ assigns \nothing;
    ensures ge_one: \is_finite(x) && 1 <= x <= 0x1p128 ==>
        \is_finite(\result) && 1 <= \result <= 0x1p64;
*/
extern double sqrt(double x);

/* [TR-LIBM-CLASS] INFINITY: Frama-C's own definition is in the math.h this
 * file replaces. */
/*@ assigns \nothing;
    ensures inf: \is_plus_infinity(\result);
*/
extern float kvq_spec_inff(void);
#define INFINITY kvq_spec_inff()

/* [TR-LIBM-CLASS] NAN: a quiet NaN (7.12p5).  Frama-C's own definition is in
 * the math.h this file replaces; without this one, the decoders of
 * include/kvq_fp8.h do not parse.  Its sign (positive for glibc's, CUDA's and
 * gcc's NAN) is not stated: WP 25 has no \sign. */
/*@ assigns \nothing;
    ensures nan: \is_NaN(\result);
*/
extern float kvq_spec_nanf(void);
#define NAN kvq_spec_nanf()

/* [TR-LIBM-CLASS] isinf / isfinite classify exactly (7.12.3). */
/*@ assigns \nothing;
    ensures classify: \result != 0 <==> \is_infinite(x);
*/
extern int kvq_spec_isinff(float x);

/*@ assigns \nothing;
    ensures classify: \result != 0 <==> \is_finite(x);
*/
extern int kvq_spec_isfinitef(float x);

#define isinf(x) kvq_spec_isinff(x)
#define isfinite(x) kvq_spec_isfinitef(x)

#endif /* KVQ_PROOFS_LIBM_SPEC_H */
