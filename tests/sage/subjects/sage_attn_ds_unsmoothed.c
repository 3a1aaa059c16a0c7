/*
 * sage_attn_ds_unsmoothed.c -- a WRONG subject: the attention pipeline computes
 * dS from the keys before smoothing (q_m K^T, not q_m K_s^T [SAGE-DS-01]).  In
 * real arithmetic the difference q_m mean(K) is one constant a row, which the
 * softmax removes; in binary32 a large common offset in K makes q_m K^T so
 * large that every score loses its key-dependent part to rounding.  kvq verify
 * must FAIL the sage-attn case with that offset ([SAGE-ATT-07],
 * [VEC-SAGE-11]); the cases without it pass.
 */
#define SUBJECT_NAME "sage-attn-ds-unsmoothed"
#define SAGE_ATTN_VARIANT KVQ_SAGE_ATTN_VAR_DS_UNSMOOTHED
#include "subject_sage.h"
