/*
 * fp8.c -- the WP driver of the FP8 module's header functions: the static
 * inline classifiers, decoders and the encoder kvq_fp8_round_bits32 of
 * include/kvq_fp8.h are the proof scope (proofs/run.sh, runs fp8_decode and
 * kvq_fp8_round_bits32); nothing here is compiled into kvq.  The binary16
 * conversions of ref/common/fp8.c are proved from that file itself (runs
 * bits32_of_f16, kvq_fp8_e4m3_from_f16, kvq_fp8_e5m2_from_f16).
 */
#include "kvq_fp8.h"
