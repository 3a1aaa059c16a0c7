/*
 * sage_per_warp.c -- a WRONG subject: declared per-thread Q/K scales
 * [SAGE-MAP-03] (gran=thread, the paper's default) are computed per warp (the
 * public code's per_warp: one scale per warp segment of Q, one per key block),
 * written into the first slots of the scale array.  kvq verify must FAIL the
 * sage-qk cases of the thread granularity and name [SAGE-MAP-03].  Every
 * other granularity and operation is the fast path's.
 */
#define SUBJECT_NAME "sage-per-warp"
#define SAGE_QK(q, p) \
    do { if ((q).gran == KVQ_SAGE_GRAN_THREAD) (q).gran = KVQ_SAGE_GRAN_WARP; } while (0)
#include "subject_sage.h"
