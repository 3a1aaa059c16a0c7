/*
 * sage_attn_no_rescale.c -- a WRONG subject: the accumulator and the buffer are not multiplied by alpha when the running maximum moves [SAGE-ATT-04].
 * kvq verify must FAIL sage-attn cases, naming [SAGE-ATT-07]: some output lies
 * farther from exact attention than the pipeline's bound.
 */
#define SUBJECT_NAME "sage-attn-no-rescale"
#define SAGE_ATTN_VARIANT KVQ_SAGE_ATTN_VAR_NO_RESCALE
#include "subject_sage.h"
