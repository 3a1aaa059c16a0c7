/*
 * sage_attn_no_ds.c -- a WRONG subject: the score without the correction dS of the smoothed Q [SAGE-ATT-03].
 * kvq verify must FAIL sage-attn cases, naming [SAGE-ATT-07]: some output lies
 * farther from exact attention than the pipeline's bound.
 */
#define SUBJECT_NAME "sage-attn-no-ds"
#define SAGE_ATTN_VARIANT KVQ_SAGE_ATTN_VAR_NO_DS
#include "subject_sage.h"
