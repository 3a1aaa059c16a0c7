/*
 * sage_pv_frac12.c -- a WRONG subject: an accumulator coarser than the class
 * K(13, 14) of [SAGE-ACC-06]: the wgmma model with every term cut at 12
 * fraction bits below the alignment exponent instead of 13.  kvq verify must
 * FAIL the bounded sage-pv cases built to lose the most at the cut (a large C
 * and same-sign products whose low bits lie just below 2^(E - 13))
 * [VEC-SAGE-11].
 */
#define SUBJECT_NAME "sage-pv-frac12"
#define SAGE_PV_MODEL(m) ((m).frac = model == KVQ_SAGE_PV_WGMMA ? 12u : (m).frac)
#include "subject_sage.h"
