# proofs/scope/40-sage.sh -- the SAGE part of the WP scope (sourced by
# proofs/run.sh): include/kvq_sage_layout.h (the per-thread map, its inverse,
# the mma row/column helpers, sizes, the signed code fields and their
# packing), one run through the driver proofs/sage_layout.c; and the
# per-element helpers of ref/fast/sage.c (input checks, the Q/K code and its
# clamp, the V code).  The tensor calls of kvq_sage.h are outside the scope
# (TRUSTED.md [TR-SCOPE]).
scope_add proofs/sage_layout.c sage_layout
FCT_OF[sage_layout]=kvq_sage_shape_ok,kvq_sage_qk_ok,kvq_sage_cmax,kvq_sage_seg,kvq_sage_slots_per_block,\
kvq_sage_blocks,kvq_sage_scale_count,kvq_sage_scale_slot,kvq_sage_slot_size,kvq_sage_slot_token,\
kvq_sage_mma_row,kvq_sage_mma_col,kvq_sage_elems,kvq_sage_code_bytes,kvq_sage_mean_rows,\
kvq_sage_code_field,kvq_sage_code_value,kvq_sage_pack_code,kvq_sage_unpack_code
scope_add ref/fast/sage.c all_finite all_within clamp_code qk_code to_fp8 v_code
# downcast alarms (RTE: a conversion to a narrower integer type keeps the
# value) on every run of this part (TRUSTED.md [TR-DOWNCAST]); to_fp8 returns
# through two returns, not ?:, whose int promotion would convert back
for f in sage_layout all_finite all_within clamp_code qk_code to_fp8 v_code; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
# kvq_sage_attention (ref/fast/sage_attn.c) [SAGE-ATT-01]: its contract and
# kvq_sage_attention_variant's (the parameter errors as behaviors in the
# spec's order, the statuses of the stages by prepare's contract, nothing
# written on an error), with kvq_sage_attn_ok; the contracts of prepare,
# core_row and work_free are assumed (TRUSTED.md [TR-SAGE-ATT])
scope_add ref/fast/sage_attn.c sage_attention
FCT_OF[sage_attention]=kvq_sage_attn_ok,kvq_sage_attention_variant,kvq_sage_attention
EXTRA[sage_attention]="-warn-signed-downcast -warn-unsigned-downcast"
