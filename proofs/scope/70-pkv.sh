# proofs/scope/70-pkv.sh -- the PKV part of the WP scope (sourced by
# proofs/run.sh): the layout helpers of include/kvq_pkv.h with a contract
# (index bytes, pattern offset, bank bytes, bank limit), one run through the
# driver proofs/pkv_layout.c; the assignment kvq_pkv_nearest of
# ref/fast/pkv.c (the least distance, ties to the lowest index, over the
# distances it computes; -wp-split: one goal per branch) in two runs: its
# loop invariant lowest_mm (pkv_nearest_lowest_mm) apart from the rest
# (kvq_pkv_nearest); and the lemma the assignment's comparison uses
# (pkv_lemmas).  The two distances, the Chebyshev centre and the V decision
# carry contracts but are outside the run (TRUSTED.md [TR-SCOPE-PKV]).
scope_add proofs/pkv_layout.c pkv_layout
FCT_OF[pkv_layout]=kvq_pkv_index_bytes,kvq_pkv_pattern_offset,kvq_pkv_bank_bytes,kvq_pkv_bank_limit
scope_add ref/fast/pkv.c kvq_pkv_nearest pkv_nearest_lowest_mm pkv_lemmas
EXTRA[kvq_pkv_nearest]="-wp-split -wp-prop=-lowest_mm"
# lowest_mm's preservation, part 8, takes Z3 11.3 M steps, over the default
# limit: the invariant's 10 goals are a run with its own Z3 limit (CVC4's is
# the default), so that the other 231 goals, 20 of them accepted and run to
# their limits, keep the default
FCT_OF[pkv_nearest_lowest_mm]=kvq_pkv_nearest
EXTRA[pkv_nearest_lowest_mm]="-wp-split -wp-prop=lowest_mm"
STEPS_OF[pkv_nearest_lowest_mm]="15000000 500000"
PROP_OF[pkv_lemmas]=kvq_pkv_lt_finite
# downcast alarms (RTE: a conversion to a narrower integer type keeps the
# value) on every run of this part but the lemma's (TRUSTED.md [TR-DOWNCAST])
for f in pkv_layout kvq_pkv_nearest pkv_nearest_lowest_mm; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
