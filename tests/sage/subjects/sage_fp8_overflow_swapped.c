/*
 * sage_fp8_overflow_swapped.c -- a WRONG subject: its FP8 conversion of P~
 * and V applies the overflow rule the policy does NOT name, and (as
 * sage_fp8_nan_at_bound) counts the static bound F as an overflow.  Under
 * overflow=saturate it writes the NaN code at F; under overflow=nan it
 * saturates, which no case can tell from the NaN rule since no SAGE
 * conversion overflows [SAGE-LEM-05] [SAGE-LEM-06] [SAGE-BAD-01] row 15.
 * kvq verify must FAIL the sage-p and sage-v cases with overflow=saturate that
 * reach F, naming the lemma; the overflow=nan cases pass.
 */
#include "kvq_fp8.h"

#define SUBJECT_NAME "sage-fp8-overflow-swapped"
#define SAGE_FP8_FIX(codes, n, fmt, pol) nan_at_bound(codes, n, fmt, (pol)->overflow == KVQ_OVERFLOW_SATURATE)

static void nan_at_bound(uint8_t *codes, uint64_t n, uint32_t fmt, int active)
{
    uint8_t top = fmt == 1u ? KVQ_FP8_E5M2_MAXCODE : KVQ_FP8_E4M3_MAXCODE;
    uint8_t nan = fmt == 1u ? KVQ_FP8_E5M2_NAN : KVQ_FP8_E4M3_NAN;
    if (!active) return;
    for (uint64_t e = 0; e < n; e++)
        if ((codes[e] & 0x7Fu) == top) codes[e] = (uint8_t)((codes[e] & 0x80u) | nan);
}

#include "subject_sage.h"
