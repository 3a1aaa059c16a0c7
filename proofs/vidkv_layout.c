/*
 * vidkv_layout.c -- the WP driver of the VIDKV helpers of include/kvq_vidkv.h
 * with a contract (the split order, the trit and its digit, the base-3 byte
 * and digit, the slot reader and writer, the mask bit, round(f*d)): the
 * header's static inline functions are the proof scope (proofs/run.sh, run
 * vidkv_layout); nothing here is compiled into kvq.
 */
#include "kvq_vidkv.h"
