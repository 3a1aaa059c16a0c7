/*
 * sage_pv_c_after.c -- a WRONG subject: the accumulator input C is added
 * after the products' sum (a binary32 addition) instead of being aligned with
 * them inside the step [SAGE-ACC-01] [SAGE-ACC-02].  kvq verify must FAIL
 * sage-pv cases at the exact level, naming [SAGE-ACC-07].
 */
#define SUBJECT_NAME "sage-pv-c-after"
#define SAGE_PV_MODEL(m) ((m).c_mode = KVQ_MMA_C_AFTER)
#include "subject_sage.h"
