# proofs/scope/20-cert.sh -- the CERT part of the WP scope (sourced by
# proofs/run.sh): ref/fast/cert.c and the CERT index maps of kvq_layout.h.
# The tensor calls and kvq_cert_quantize_key_block are outside the scope
# (TRUSTED.md [TR-SCOPE]).  cert_layout is one WP run over the CERT index maps
# of kvq_layout.h (small integer functions; one run saves Frama-C's start-up
# time 20 times).
scope_add ref/fast/cert.c \
  cert_layout \
  kvq_cert_is_f16 kvq_certi_check_f16 key_code kvq_certi_key_meta_ok value_meta_ok \
  kvq_certi_value_meta_ok kvq_certi_value_deq \
  u128_mul64 u128_add u128_cmp u128_shl fixed24 iabs64 sq_cmp ru_norm24 \
  up_add up_mul up_gamma
FCT_OF[cert_layout]=kvq_cert_full_blocks,kvq_cert_residual_tokens,kvq_cert_blocks,kvq_cert_quant_tokens,\
kvq_cert_block_first,kvq_cert_block_tokens,kvq_cert_in_index,kvq_cert_key_block_bytes,\
kvq_cert_key_code_bytes,kvq_cert_key_block_offset,kvq_cert_key_code_index,\
kvq_cert_key_meta_count,kvq_cert_key_meta_index,kvq_cert_value_groups_per_token,\
kvq_cert_value_group_bytes,kvq_cert_value_groups,kvq_cert_value_code_bytes,\
kvq_cert_value_group,kvq_cert_value_code_offset,kvq_cert_value_channel,kvq_cert_value_group_of
# downcast alarms (RTE: a conversion to a narrower integer type keeps the
# value) on every run of this part (TRUSTED.md [TR-DOWNCAST])
for f in cert_layout kvq_cert_is_f16 kvq_certi_check_f16 key_code kvq_certi_key_meta_ok \
         value_meta_ok kvq_certi_value_meta_ok kvq_certi_value_deq u128_mul64 u128_add u128_cmp \
         u128_shl fixed24 iabs64 sq_cmp ru_norm24 up_add up_mul up_gamma; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
