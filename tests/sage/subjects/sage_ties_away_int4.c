/*
 * sage_ties_away_int4.c -- a WRONG subject: its INT4 Q/K quantizer rounds
 * ties away from zero whatever the policy says, so under the `paper` rounding
 * with ties=even declared an exact tie q = k + 1/2 gets the code away from
 * zero instead of the even one [SAGE-Q-03] [POL-TIE-01].  kvq verify must
 * FAIL the sage-qk cases with ties (the `ties` distribution: every slot's
 * scale a power of two, half-integer quotients exact) and name [SAGE-Q-03].
 * INT8, the public rounding, P~, V and dS are the fast path's.
 */
#define SUBJECT_NAME "sage-ties-away-int4"
#define SAGE_QK(q, p) \
    do { if ((q).bits == 4u && (q).rounding == KVQ_SAGE_ROUND_PAPER) (p).ties = KVQ_TIES_AWAY; } while (0)
#include "subject_sage.h"
