/*
 * sage_pv_wide_accumulator.c -- a subject of another accumulator: 40 fraction
 * bits a step and results rounded to nearest binary32, more than the Hopper
 * models keep (a later tensor core's, or a CUDA-core kernel's).  It is in the
 * class K(13, 14) [SAGE-ACC-06]: kvq verify must PASS its sage-pv cases at the
 * bounded level and FAIL them at the exact level, naming [SAGE-ACC-07].
 */
#define SUBJECT_NAME "sage-pv-wide-accumulator"
#define SAGE_PV_MODEL(m) ((m).frac = 40u, (m).bits = 24u, (m).round = KVQ_MMA_ROUND_RNE, (m).c_mode = KVQ_MMA_C_INSIDE)
#include "subject_sage.h"
