# [TR-GOAL-VIDKV-FLOAT] [VIDKV-K-02] kvq_vidkv_round_half_even: x = RN64(f d) is exact and x <= d.
# Models: include/kvq_vidkv.h:176-180 `double x = (double)f * (double)d; uint32_t i =
#   (uint32_t)x; double r = x - (double)i; if (r > 0.5 || (r == 0.5 && i % 2u == 1u)) i++;`
# Goals: typed_kvq_vidkv_round_half_even_ensures_range
# Statement: f binary32 in [0, 1], d integer in [0, 1024] |- RN64(f d) == f d; RN64(f d) - d <= 0
# f has 24 significant bits and d at most 11, so the product is exact in binary64.  With
# x <= d: i = trunc(x) <= d, and i == d forces x == d, r = 0, no increment: \result <= d.
# (The two binary64 facts are what the solvers do not close; the integer step is WP's.)
@rnd64 = float<ieee_64, ne>;
f = float<ieee_32, ne>(f_);
d = int<ne>(d_);
x = rnd64(f * d);
{ f in [0, 1] /\ d in [0, 1024] -> x - f * d in [0, 0] /\ x - d <= 0 }
