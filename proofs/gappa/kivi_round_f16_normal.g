# [TR-GOAL-FLOAT] [POL-F16-01] kvq_round_f16, normal branch, binades e <= 15 (2^-14 <= a < 2^15).
# Models: ref/fast/kivi.c:87-89 `(void)frexpf(a, &e); r = ldexpf((float)round_nonneg(
#   ldexpf(a, 11 - e), KVQ_TIES_EVEN), e - 11);`
# Goals: typed_kvq_round_f16_call_round_nonneg_2_requires_finite
#   typed_kvq_round_f16_call_round_nonneg_2_requires_range typed_kvq_round_f16_ensures_finite_result
#   typed_kvq_round_f16_ensures_bounded typed_kvq_round_f16_ensures_sign
# Statement: m = frexpf mantissa in [1/2, 1), p = 2^(e-11) in [2^-24, 2^4] |- y = m 2^11 is
#   binary32, y in [1024, 2048]; n = RNE(y) in [1024, 2048]; (float)n == n; r = n p in [2^-14, 32768]
# frexpf and ldexpf as C11 F.10.3.4/F.10.3.6 define them: a = m 2^e exactly, and
# ldexpf(a, 11 - e) = m 2^11 (no underflow, no overflow), so the argument of round_nonneg
# is y = m 2^11, finite and in [0, 2^31) (its `finite` and `range` preconditions).
# round_nonneg returns RNE(y) (floor or floor + 1, [TR-ROUNDING-CHOICE]; both are in
# [1024, 2048]).  r = ldexpf(n, e - 11) = n 2^(e-11) is exact (12 significant bits,
# normal), in [2^-14, 32768] <= 65504: finite, bounded, >= 0 (copysignf then gives v's
# sign: `sign`).  WP does not prove these goals because proofs/libm_spec.h states
# ldexpf's value only for e == 24 and frexpf's exponent not at all.
@rnd = float<ieee_32, ne>;
m = rnd(m_);
y = rnd(m * 2048);
n = int<ne>(y);
fn = rnd(n);
r = n * p;
{ m in [0.5, 0x1.fffffep-1] /\ p in [0x1p-24, 0x1p4]
  -> y - m * 2048 in [0, 0] /\ y in [1024, 2048] /\ n in [1024, 2048] /\ fn - n in [0, 0]
     /\ r in [0x1p-14, 32768] }
