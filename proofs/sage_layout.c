/*
 * sage_layout.c -- the WP driver of the SAGE layout helpers: the header's
 * static inline functions are the proof scope (proofs/run.sh, run
 * sage_layout); nothing here is compiled into kvq.
 */
#include "kvq_sage_layout.h"
