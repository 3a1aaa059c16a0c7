/*
 * sage_e5m2_for_e4m3.c -- a WRONG subject: P~ and V are converted to E5M2
 * (with its static bound 57344) where the case declares E4M3 (448)
 * [SAGE-P-03].  kvq verify must FAIL the sage-p and sage-v cases of fmt=e4m3
 * and name [SAGE-P-03]; the E5M2 cases pass.
 */
#define SUBJECT_NAME "sage-e5m2-for-e4m3"
#define SAGE_FMT(fmt) KVQ_SAGE_FP8_E5M2
#include "subject_sage.h"
