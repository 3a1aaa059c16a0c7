/*
 * sage_attn_p_unscaled.c -- a WRONG subject: P~ is FP8(p) instead of FP8(448 p), its static scale left out [SAGE-ATT-04].
 * kvq verify must FAIL sage-attn cases, naming [SAGE-ATT-07]: some output lies
 * farther from exact attention than the pipeline's bound.
 */
#define SUBJECT_NAME "sage-attn-p-unscaled"
#define SAGE_ATTN_VARIANT KVQ_SAGE_ATTN_VAR_P_UNSCALED
#include "subject_sage.h"
