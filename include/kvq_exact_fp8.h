/*
 * kvq_exact_fp8.h -- the FP8 E4M3 / E5M2 conversions on the exact path (GNU
 * MPFR, ref/exact/fp8.c) [POL-FP8-01..03].
 *
 * The same functions as the fast path's (include/kvq_fp8.h), with the same
 * contracts, computed another way: the input's value is taken exactly into
 * MPFR (from the float, or from the binary16 fields), rounded once onto the
 * FP8 grid by kvq_exact_round (precision p = 4 or 3 in the normal binades,
 * fewer bits in the subnormal ones: the grid of [POL-FMT-01]), and only then
 * classified (overflow, policy) and encoded from the rounded value.  Like the
 * rest of the exact path it never touches MPFR's exponent range or any other
 * global state [POL-GLOB-01].
 */
#ifndef KVQ_EXACT_FP8_H
#define KVQ_EXACT_FP8_H

#include <mpfr.h>

#include "kvq_exact.h"
#include "kvq_fp8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The FP8 grids as kvq_xfmt [POL-FMT-01]: the smallest subnormal 2^(emin_sub-1)
 * (2^-9, 2^-16); emax bounds the binades the grid has (|v| >= 2^emax: 512,
 * 65536).  E4M3 overflows below 2^emax as well (480 is a NaN code), so the
 * conversions decide overflow by comparing the rounded value with the largest
 * finite value, not by kvq_exact_round's indication. */
extern const kvq_xfmt kvq_xfmt_e4m3; /* { 4, -8, 9 } */
extern const kvq_xfmt kvq_xfmt_e5m2; /* { 3, -15, 16 } */

/* dst = the value of code c, exactly (dst's precision >= 4).  Returns 0 for
 * a finite code, 1 for an infinity (E5M2 only; dst = +-inf), 2 for a NaN
 * (dst = NaN; its sign is the code's sign bit, c / 128). */
int kvq_exact_fp8_e4m3_value(mpfr_t dst, uint8_t c);
int kvq_exact_fp8_e5m2_value(mpfr_t dst, uint8_t c);

/* The conversions of include/kvq_fp8.h, evaluated with MPFR; same arguments,
 * same results, same flags (only KVQ_FLAG_SATURATED, OR-ed; flags may be NULL). */
uint8_t kvq_exact_fp8_e4m3_from_f32(float x, uint32_t overflow_policy, uint32_t *flags);
uint8_t kvq_exact_fp8_e4m3_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags);
uint8_t kvq_exact_fp8_e5m2_from_f32(float x, uint32_t overflow_policy, uint32_t *flags);
uint8_t kvq_exact_fp8_e5m2_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_EXACT_FP8_H */
