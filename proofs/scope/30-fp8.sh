# proofs/scope/30-fp8.sh -- the FP8 part of the WP scope (sourced by
# proofs/run.sh), the shared module: the static inline functions of
# include/kvq_fp8.h through the driver proofs/fp8.c -- the classifiers and
# decoders in one run, fp8_decode, and the encoder kvq_fp8_round_bits32 that
# the device kernels share -- and the binary16 conversions of
# ref/common/fp8.c.  The binary32 conversions kvq_fp8_*_from_f32 are outside
# the scope (TRUSTED.md [TR-SCOPE]).
scope_add proofs/fp8.c fp8_decode kvq_fp8_round_bits32
FCT_OF[fp8_decode]=kvq_fp8_e4m3_is_nan,kvq_fp8_e5m2_is_nan,kvq_fp8_e5m2_is_inf,kvq_fp8_e4m3_to_f32,\
kvq_fp8_e5m2_to_f32
scope_add ref/common/fp8.c bits32_of_f16 kvq_fp8_e4m3_from_f16 kvq_fp8_e5m2_from_f16
# downcast alarms (RTE: a conversion to a narrower integer type keeps the
# value) on every run of this part (TRUSTED.md [TR-DOWNCAST])
for f in fp8_decode kvq_fp8_round_bits32 bits32_of_f16 kvq_fp8_e4m3_from_f16 kvq_fp8_e5m2_from_f16; do
  EXTRA[$f]="${EXTRA[$f]:+${EXTRA[$f]} }-warn-signed-downcast -warn-unsigned-downcast"
done
