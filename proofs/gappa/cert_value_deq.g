# [TR-GOAL-CERT-FLOAT] [CERT-V4-02] kvq_certi_value_deq: v^ = fmaf(c, s, zv) lies in [-2^20, 2^20].
# Models: ref/fast/cert.c kvq_certi_value_deq `c = (float)kvq_unpack_code(..., KVQ_CERT_VBITS);
#   return fmaf(c, scale[g], zero[g]);` with kvq_value_meta_l(s, zv): finite binary32 in
#   [-65504, 65504] (the predicate states the range, not the binary16 grid)
# Goals: typed_kvq_certi_value_deq_ensures_bounded
# Statement: k integer in [0, 15], s, zv binary32 in [-65504, 65504] |- (float)k == k in
#   [0, 15]; c s + zv in [-16 65504, 16 65504]; RN32(c s + zv) in [-2^20, 2^20]
# fmaf rounds c s + zv once (C11 F.10.10.1, [TR-LIBM-FMA]); a result Gappa bounds by
# 2^20 < FLT_MAX is the IEEE result, finite.  kvq_unpack_code returns an integer
# 0 <= k <= 15 (its proved contract); its conversion is exact (`c_range`, proved by WP).
@rnd = float<ieee_32, ne>;
k = int<ne>(k_);
c = rnd(k);
s = rnd(s_);
zv = rnd(z_);
y = rnd(c * s + zv);
{ k in [0, 15] /\ s in [-65504, 65504] /\ zv in [-65504, 65504]
  -> c - k in [0, 0] /\ c in [0, 15] /\ c * s + zv in [-1048064, 1048064] /\ y in [-0x1p20, 0x1p20] }
