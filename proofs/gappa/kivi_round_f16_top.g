# [TR-GOAL-FLOAT] [POL-F16-02] kvq_round_f16, normal branch, top binade e = 16 (2^15 <= a < 65520).
# Models: ref/fast/kivi.c:80 `if (a >= KVQ_F16_OVF)` (not taken) and 87-89 as in
#   kivi_round_f16_normal.g with e = 16: y = ldexpf(a, -5), r = ldexpf((float)n, 5)
# Goals: typed_kvq_round_f16_call_round_nonneg_2_requires_finite
#   typed_kvq_round_f16_call_round_nonneg_2_requires_range typed_kvq_round_f16_ensures_finite_result
#   typed_kvq_round_f16_ensures_bounded typed_kvq_round_f16_ensures_sign
# Statement: a binary32, 2^15 <= a < 65520 |- y = a 2^-5 in [1024, 2047.5); n = RNE(y)
#   in [1024, 2047]; r = 32 n in [32768, 65504]
# The binary32 a below 65520 is at most 65520 - 2^-8; y stays below the tie 2047.5, so
# even round_nonneg's weaker contract (floor or floor + 1 of y, floor(y) <= 2047 and the
# remainder below 1/2) gives n <= 2047 and r <= 65504 = the `bounded` limit exactly.
@rnd = float<ieee_32, ne>;
a = rnd(a_);
y = rnd(a * 0x1p-5);
n = int<ne>(y);
r = n * 32;
{ a in [32768, 65519.99609375]
  -> y - a * 0x1p-5 in [0, 0] /\ y in [1024, 2047.4998779296875] /\ n in [1024, 2047]
     /\ r in [32768, 65504] }
