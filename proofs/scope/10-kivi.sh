# proofs/scope/10-kivi.sh -- the KIVI part of the WP scope (sourced by
# proofs/run.sh; the file's number orders the runs and the summary).
# ref/fast/kivi.c and the KIVI layout helpers of kvq_layout.h: every function
# with a contract, in dependency order; "lemmas" proves the lemmas of
# kvq_layout.h that WP is asked to prove.
scope_add ref/fast/kivi.c \
  lemmas \
  kvq_pow2_small kvq_code_max kvq_code_byte kvq_code_shift \
  kvq_unpack_code kvq_pack_code kvq_kivi_residual_after_prefill \
  round_up floor_split round_nonneg kvq_round_int kvq_round_f16 read_input group_meta code_quotient code_of \
  group_minmax kvq_kivi_quantize_group kivi_layout meta_ok \
  kvq_kivi_window_prefill kvq_kivi_window_append
# kvq_kivi_quantize and kvq_kivi_dequantize carry their contracts, but are not
# runs yet: at the load of the shared 2-core machine their first run had not
# finished (TRUSTED.md [TR-SCOPE]); add them here after meta_ok, with their run
# in the inventory and the mutations kivi_deq_minus_zero and
# kivi_quant_extent_status of proofs/mutants.sh
# the KIVI tensor-layout helpers of kvq_layout.h that the tensor calls use, one run
FCT_OF[kivi_layout]=kvq_kivi_params_ok,kvq_kivi_shape_ok,kvq_kivi_elems,kvq_kivi_groups,\
kvq_kivi_group_bytes,kvq_kivi_group_base,kvq_kivi_group_stride,kvq_kivi_elem_index,\
kvq_kivi_group_code_offset
PROP_OF[lemmas]=kvq_code_shift_distinct,kvq_round_ties_above,kvq_round_ties_below
# the window invariant is a conjunction of ten integer facts; split, each
# closes in well under the limit
EXTRA[kvq_kivi_window_append]="-wp-split"
EXTRA[kvq_kivi_window_prefill]="-wp-split"
# downcast alarms (RTE: a conversion to a narrower integer type keeps the
# value) on every run of this file; of the other parts, CERT, FP8 and PKV do
# not have them yet (TRUSTED.md [TR-DOWNCAST])
for f in kvq_pow2_small kvq_code_max kvq_code_byte kvq_code_shift kvq_unpack_code kvq_pack_code \
         kvq_kivi_residual_after_prefill round_up floor_split round_nonneg kvq_round_int \
         kvq_round_f16 read_input group_meta code_quotient code_of group_minmax \
         kvq_kivi_quantize_group kivi_layout meta_ok kvq_kivi_window_prefill \
         kvq_kivi_window_append; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
