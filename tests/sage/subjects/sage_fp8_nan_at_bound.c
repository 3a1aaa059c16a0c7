/*
 * sage_fp8_nan_at_bound.c -- a WRONG subject: under the NaN overflow policy
 * its FP8 conversion of P~ and V treats the static bound F itself (448 E4M3,
 * 57344 E5M2) as an overflow and writes the NaN code, where the conversion
 * never overflows and the element of magnitude F gets the largest finite code
 * (p = 1 in P~ [SAGE-P-01] [SAGE-LEM-06]; |v| = m_c in V [SAGE-V-02]
 * [SAGE-LEM-05]).  kvq verify must FAIL the sage-p and sage-v cases with
 * overflow=nan that reach F, naming the lemma; the saturate cases pass.
 */
#include "kvq_fp8.h"

#define SUBJECT_NAME "sage-fp8-nan-at-bound"
#define SAGE_FP8_FIX(codes, n, fmt, pol) nan_at_bound(codes, n, fmt, (pol)->overflow == KVQ_OVERFLOW_NAN)

static void nan_at_bound(uint8_t *codes, uint64_t n, uint32_t fmt, int active)
{
    uint8_t top = fmt == 1u ? KVQ_FP8_E5M2_MAXCODE : KVQ_FP8_E4M3_MAXCODE;
    uint8_t nan = fmt == 1u ? KVQ_FP8_E5M2_NAN : KVQ_FP8_E4M3_NAN;
    if (!active) return;
    for (uint64_t e = 0; e < n; e++)
        if ((codes[e] & 0x7Fu) == top) codes[e] = (uint8_t)((codes[e] & 0x80u) | nan);
}

#include "subject_sage.h"
