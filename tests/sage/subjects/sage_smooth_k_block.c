/*
 * sage_smooth_k_block.c -- a WRONG subject: its smoothing subtracts the mean
 * of each key block (b_k = 64 tokens, the default) instead of the mean over
 * all N tokens of the head [SAGE-SM-03] (a per-head segment longer than 64
 * tokens is cut into blocks of 64; the first block's mean row is returned).
 * kvq verify must FAIL the sage-qk cases of K with N > 64 and name
 * [SAGE-SM-03] (Q's per-head cases fail too, naming [SAGE-SM-04]).
 */
#define SUBJECT_NAME "sage-smooth-k-block"
#define SAGE_SMOOTH_SEG(seg, shape) ((seg) > 64u ? 64u : (seg))
#include "subject_sage.h"
