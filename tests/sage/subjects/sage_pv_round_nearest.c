/*
 * sage_pv_round_nearest.c -- a WRONG subject: the accumulator rounds each
 * step's sum to nearest even where the measured models cut it toward zero
 * [SAGE-ACC-02].  kvq verify must FAIL sage-pv cases at the exact level
 * (naming [SAGE-ACC-07] and the model); the rounding keeps the class K(13, 14)
 * [SAGE-ACC-06], so the bounded level passes.
 */
#define SUBJECT_NAME "sage-pv-round-nearest"
#define SAGE_PV_MODEL(m) ((m).round = KVQ_MMA_ROUND_RNE)
#include "subject_sage.h"
