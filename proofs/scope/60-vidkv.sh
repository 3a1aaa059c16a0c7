# proofs/scope/60-vidkv.sh -- the VIDKV part of the WP scope (sourced by
# proofs/run.sh): the helpers of include/kvq_vidkv.h with a contract, one run
# (vidkv_layout) through the driver proofs/vidkv_layout.c: round(f*d) ties to
# even, the mask bit reader and writer, the split order, the trit and its
# digit, 3^j, the base-3 byte and digit, the slot reader and writer; and the
# residual window of ref/fast/vidkv.c.  The tensor calls of ref/fast/vidkv.c
# are outside the scope (TRUSTED.md [TR-SCOPE]).
scope_add proofs/vidkv_layout.c vidkv_layout
FCT_OF[vidkv_layout]=kvq_vidkv_round_half_even,kvq_vidkv_mask_get,kvq_vidkv_mask_set,\
kvq_vidkv_before,kvq_vidkv_trit,kvq_vidkv_trit_digit,kvq_vidkv_digit_trit,kvq_vidkv_pow3,\
kvq_vidkv_base3_byte,kvq_vidkv_base3_digit,kvq_vidkv_tern_get,kvq_vidkv_tern_put
# the residual window of ref/fast/vidkv.c [VIDKV-W-01..02]: statuses, the
# prefill's split L = quantized + pending, a step's flush and counts
scope_add ref/fast/vidkv.c kvq_vidkv_window_prefill kvq_vidkv_window_append
# downcast alarms (RTE: a conversion to a narrower integer type keeps the
# value) on every run of this part (TRUSTED.md [TR-DOWNCAST])
for f in vidkv_layout kvq_vidkv_window_prefill kvq_vidkv_window_append; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
