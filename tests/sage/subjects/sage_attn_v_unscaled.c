/*
 * sage_attn_v_unscaled.c -- a WRONG subject: the output without V's channel scale [SAGE-ATT-06].
 * kvq verify must FAIL sage-attn cases, naming [SAGE-ATT-07]: some output lies
 * farther from exact attention than the pipeline's bound.
 */
#define SUBJECT_NAME "sage-attn-v-unscaled"
#define SAGE_ATTN_VARIANT KVQ_SAGE_ATTN_VAR_V_UNSCALED
#include "subject_sage.h"
