# proofs/scope/70-pkv.sh -- the PKV part of the WP scope (sourced by
# proofs/run.sh): the layout helpers of include/kvq_pkv.h with a contract
# (index bytes, pattern offset, bank bytes, bank limit), one run through the
# driver proofs/pkv_layout.c; the assignment kvq_pkv_nearest of
# ref/fast/pkv.c (the least distance, ties to the lowest index, over the
# distances it computes; -wp-split: one goal per branch); and the lemma the
# assignment's comparison uses (pkv_lemmas).  The two distances, the
# Chebyshev centre and the V decision carry contracts but are outside the run
# (TRUSTED.md [TR-SCOPE-PKV]).
scope_add proofs/pkv_layout.c pkv_layout
FCT_OF[pkv_layout]=kvq_pkv_index_bytes,kvq_pkv_pattern_offset,kvq_pkv_bank_bytes,kvq_pkv_bank_limit
scope_add ref/fast/pkv.c kvq_pkv_nearest pkv_lemmas
EXTRA[kvq_pkv_nearest]=-wp-split
PROP_OF[pkv_lemmas]=kvq_pkv_lt_finite
# one preservation goal (lowest_mm, part 8) takes Z3 11.3 M steps, over the
# default limit: the run's own Z3 limit (CVC4's is the default)
STEPS_OF[kvq_pkv_nearest]="15000000 500000"
