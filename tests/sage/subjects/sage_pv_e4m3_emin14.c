/*
 * sage_pv_e4m3_emin14.c -- a WRONG subject: the wgmma E4M3 model aligns a
 * subnormal operand at emin -14 (its own exponent: every E4M3 subnormal is at
 * least 2^-9) instead of E4M3's emin -6 [SAGE-ACC-02].  The alignment
 * exponent of a product with a subnormal A moves the cut of every other term.
 * kvq verify must FAIL the exact sage-pv cases whose A codes are subnormal
 * [VEC-SAGE-11].
 */
#define SUBJECT_NAME "sage-pv-e4m3-emin14"
#define SAGE_PV_MODEL(m) \
    ((m).emin = model == KVQ_SAGE_PV_WGMMA && fmt == KVQ_SAGE_FP8_E4M3 ? -14 : (m).emin)
#include "subject_sage.h"
