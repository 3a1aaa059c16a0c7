/*
 * mma.c -- the WP driver of the accumulator emulator's integer parts: the
 * static inline functions of include/kvq_mma.h are the proof scope
 * (proofs/run.sh, runs mma_terms, kvq_mma_to_f32, kvq_mma_add_f32,
 * kvq_mma_dot and mma_lemmas); nothing here is compiled into kvq.
 *
 * The one assumption added here: what the host branch of kvq_mma_bitlen calls,
 * GCC's __builtin_clzll, returns the number of leading zero bits of a nonzero
 * 64-bit word (GCC manual, "Other Builtins"; proofs/TRUSTED.md
 * [TR-BUILTIN-CLZ]).  Frama-C's own declaration (__fc_gcc_builtins.h) states
 * only its range; this declaration adds the defining property and is merged
 * with it.
 */
/* The leading one of x is bit 63 - clz: x >> (63 - clz) == 1. */
/*@ requires x_nonzero: x != 0;
    assigns \result \from indirect:x;
    ensures clz: 0 <= \result <= 63 && (x >> (63 - \result)) == 1;
*/
int __builtin_clzll(unsigned long long x);

#include "kvq_mma.h"
