# proofs/scope/10-kivi.sh -- the KIVI part of the WP scope (sourced by
# proofs/run.sh; the file's number orders the runs and the summary).
# ref/fast/kivi.c and the KIVI layout helpers of kvq_layout.h: every function
# with a contract, in dependency order; "lemmas" proves the lemmas of
# kvq_layout.h that WP is asked to prove.
scope_add ref/fast/kivi.c \
  lemmas kivi_bytes kivi_index \
  kvq_pow2_small kvq_code_max kvq_code_byte kvq_code_shift \
  kvq_unpack_code kvq_pack_code kvq_kivi_residual_after_prefill \
  round_up floor_split round_nonneg kvq_round_int kvq_round_f16 read_input group_meta code_quotient code_of \
  group_minmax kvq_kivi_quantize_group kivi_layout meta_ok \
  code_float deq_value dequantize_group kvq_kivi_dequantize kvq_kivi_quantize \
  kvq_kivi_window_prefill kvq_kivi_window_append
# The dequantizer: a per-value step (code_float, deq_value), a per-group loop
# (dequantize_group: the group's values, the other groups' kept) and the tensor
# loop over whole groups; its index facts are the lemmas of runs kivi_bytes and
# kivi_index.  The quantizer's tensor loop calls kvq_kivi_quantize_group once a
# group (its accepted goals: TRUSTED.md [TR-GOAL-KIVI-PREPASS],
# [TR-GOAL-KIVI-TENSOR]; -wp-split makes its invariant `before` fail in parts).
# the KIVI tensor-layout helpers of kvq_layout.h that the tensor calls use, one run
FCT_OF[kivi_layout]=kvq_kivi_params_ok,kvq_kivi_shape_ok,kvq_kivi_elems,kvq_kivi_groups,\
kvq_kivi_group_bytes,kvq_kivi_group_base,kvq_kivi_group_stride,kvq_kivi_elem_index,\
kvq_kivi_group_code_offset
PROP_OF[lemmas]=kvq_code_shift_distinct,kvq_round_ties_above,kvq_round_ties_below
# the index facts of kivi.c the tensor calls use (axiomatic KviLayout), two
# runs: the code-byte bound split on the bit width by WP's range tactic
# (wp:range: one subgoal per width, each linear), and the block and
# element-index facts
PROP_OF[kivi_bytes]=kvq_kivi_byte_in_1,kvq_kivi_byte_in_2,kvq_kivi_byte_in_4,kvq_kivi_byte_in_8,\
kvq_kivi_byte_in
EXTRA[kivi_bytes]="-wp-auto wp:range"
PROP_OF[kivi_index]=kvq_kivi_block_in,kvq_kivi_block_end,kvq_kivi_index_in,kvq_kivi_index_distinct
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
         kvq_kivi_quantize_group kivi_layout meta_ok code_float deq_value dequantize_group \
         kvq_kivi_dequantize kvq_kivi_quantize kvq_kivi_window_prefill kvq_kivi_window_append; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
