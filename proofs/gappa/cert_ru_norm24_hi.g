# [TR-GOAL-CERT-FLOAT] [CERT-ANN-01] ru_norm24: the first candidate is in [1, 2^64] (2^64 <= N < 2^100).
# Models: ref/fast/cert.c ru_norm24 `if (n.hi == 0 && n.lo == 0) return 0.0f;
#   y = (float)sqrt((double)n.hi * 0x1p64 + (double)n.lo);`, case n.hi >= 1
# Goals: typed_ru_norm24_loop_invariant_y_ok_established
# Statement: hi integer in [1, 2^36), lo integer in [0, 2^64) |- RN64(RN64(hi) 2^64 + RN64(lo)) in [1, 2^101];
#   y = RN32(RN64(sqrt(.))) in [1, 2^64]
# Binary64 conversions, the scaling by 2^64, the sum and sqrt each round to nearest
# (C11 F.3, F.10.4.5), as the C line does them.  A y Gappa bounds by 2^64 is the IEEE result, finite: the
# loop invariant `y_ok` holds on entry.  (The case n.hi == 0: cert_ru_norm24_lo.g.)
@rnd = float<ieee_32, ne>;
@rnd64 = float<ieee_64, ne>;
hi = int<ne>(hi_);
lo = int<ne>(lo_);
n = rnd64(rnd64(rnd64(hi) * 0x1p64) + rnd64(lo));
y = rnd(rnd64(sqrt(n)));
{ hi in [1, 68719476735] /\ lo in [0, 18446744073709551615] -> n in [1, 0x1p101] /\ y in [1, 0x1p64] }
