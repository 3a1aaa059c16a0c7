/*
 * sage_fp8_saturate_always.c -- a CONFORMING subject with a policy defect no
 * SAGE case can observe: its FP8 conversion of P~ and V saturates whatever
 * the overflow policy says.  No SAGE conversion overflows [SAGE-LEM-05]
 * [SAGE-LEM-06], so the policy never changes a result ([SAGE-BAD-01] row
 * 15) and kvq verify must PASS every case.
 */
#define SUBJECT_NAME "sage-fp8-saturate-always"
#define SAGE_FP8_POL(p) ((p).overflow = KVQ_OVERFLOW_SATURATE)

#include "subject_sage.h"
