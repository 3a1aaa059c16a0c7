# [TR-GOAL-FLOAT] [POL-F16-01] kvq_round_f16, subnormal branch (a < 2^-14).
# Models: ref/fast/kivi.c:84-85 `r = ldexpf((float)round_nonneg(ldexpf(a, 24),
#   KVQ_TIES_EVEN), -24);`
# Goals: typed_kvq_round_f16_ensures_finite_result typed_kvq_round_f16_ensures_bounded
#   typed_kvq_round_f16_ensures_sign
# Statement: a binary32, 0 <= a < 2^-14 |- y = a 2^24 is binary32, y in [0, 1024);
#   n = RNE(y) in [0, 1024]; (float)n == n; r = n 2^-24 in [0, 2^-14]
# ldexpf(a, 24) is exact (C11 F.10.3.6; proofs/libm_spec.h states it for e == 24, so WP
# proves this call's preconditions); the result r is a multiple of 2^-24 at most 2^-14:
# finite, bounded, >= 0.
@rnd = float<ieee_32, ne>;
a = rnd(a_);
y = rnd(a * 0x1p24);
n = int<ne>(y);
fn = rnd(n);
r = n * 0x1p-24;
{ a in [0, 0x1.fffffep-15]
  -> y - a * 0x1p24 in [0, 0] /\ y in [0, 1024] /\ n in [0, 1024] /\ fn - n in [0, 0]
     /\ r in [0, 0x1p-14] }
