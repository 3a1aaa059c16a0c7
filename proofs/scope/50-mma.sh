# proofs/scope/50-mma.sh -- the accumulator emulator's part of the WP scope
# (sourced by proofs/run.sh): the integer parts of include/kvq_mma.h through
# the driver proofs/mma.c: the term builders, bit length, top, below and cut
# in one run (mma_terms), the binary32 rounding kvq_mma_to_f32 in its own run,
# and the lemmas of kvq_mma.h that WP is asked to prove (mma_lemmas: the two
# division lemmas; the three shift lemmas are accepted, TRUSTED.md
# [TR-GOAL-MMA-SHIFT]).  The finite-domain 2^k lemmas are enumerated by
# proofs/mma_enum.c.  kvq_mma_add_f32 and kvq_mma_dot carry contracts but are
# outside the run (TRUSTED.md [TR-SCOPE-MMA]: 59/67 and about 1/3 of 94 goals
# in 130 s and over 5 min; run them by hand with -wp-fct).
scope_add proofs/mma.c mma_terms kvq_mma_to_f32 mma_lemmas
FCT_OF[mma_terms]=kvq_mma_fp8_term,kvq_mma_f32_term,kvq_mma_bitlen,kvq_mma_top,kvq_mma_below,kvq_mma_cut
PROP_OF[mma_lemmas]=kvq_mma_div_one,kvq_mma_div_half,kvq_mma_shl,kvq_mma_shr,kvq_mma_mask
# downcast alarms (RTE: a conversion to a narrower integer type keeps the
# value) on every run of this part but the lemmas (TRUSTED.md [TR-DOWNCAST]):
# kvq_mma_cut's (int64_t) of t.mag 2^k by its precondition fits (assertion
# v_fits), kvq_mma_to_f32's (uint32_t) of a subnormal's field by keep24 and
# sub_field
for f in mma_terms kvq_mma_to_f32; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
