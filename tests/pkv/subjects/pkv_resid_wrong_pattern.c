/*
 * pkv_resid_wrong_pattern.c -- a WRONG subject: it stores the index of the
 * pattern it matched but takes the residual against the next pattern of the
 * bank (j + 1, wrapping), where [PKV-Q-02] pins r = RN32(x - m) with m the
 * stored index's pattern.  kvq verify must FAIL every quantizing case whose
 * bank holds two or more patterns (and a token that keeps its pattern) and
 * name [PKV-Q-02].
 */
#define SUBJECT_NAME "pkv-resid-wrong-pattern"
#define PKV_RESID_PATTERN(j, npat) (((j) + 1u) % (npat))
#include "subject_pkv.h"
