/*
 * pkv_layout.c -- the WP driver of the PKV layout helpers: the static inline
 * functions of include/kvq_pkv.h with a contract are the proof scope
 * (proofs/run.sh, run pkv_layout); nothing here is compiled into kvq.
 */
#include "kvq_pkv.h"
