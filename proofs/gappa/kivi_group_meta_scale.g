# [TR-GOAL-FLOAT] [KIVI-Q-02] [POL-ZR-01] group_meta: the scale RN32(r / cmax) is finite and >= 0.
# Models: ref/fast/kivi.c:125-133 `cmax = (float)kvq_code_max(bits); r = mx - mn;
#   (r = KVQ_F32_MAX when isinf(r)); s = r / cmax;`
# Goals: typed_group_meta_ensures_meta_finite typed_group_meta_ensures_scale_form
#   typed_group_meta_call_kvq_round_f16_requires_finite
# Statement: mx - mn in [0, 2^129], r in [0, FLT_MAX], cmax in {1,3,15,255} |- RN32(mx - mn) >= 0,
#   (float)cmax == cmax, RN32(r / cmax) in [0, FLT_MAX]
# mx >= mn (precondition `order`), both finite: 0 <= mx - mn <= 2 FLT_MAX < 2^129.
# Gappa's float<ieee_32,ne> has no overflow; a result it bounds by FLT_MAX is the IEEE
# result and is finite.  r is either RN32(mx - mn) (isinf(r) false: at most FLT_MAX) or
# the saturated FLT_MAX, both in [0, FLT_MAX] (the first >= 0 by the first claim).  So s
# is finite and >= 0: the binary16 branch gets a finite argument (kvq_round_f16's
# `finite`), and `s < 2^-126` (or `< 2^-14`) leaves s == 0 || s >= 2^-126 (`scale_form`;
# s is no NaN), and `meta_finite` holds with z = mn (finite) or kvq_round_f16's bounded
# result.
@rnd = float<ieee_32, ne>;
mn = rnd(mn_);
mx = rnd(mx_);
rd = rnd(mx - mn);
cmi = int<ne>(cmi_);
cm = rnd(cmi);
r = rnd(r_);
s = rnd(r / cm);
{ mx - mn in [0, 0x1p129] /\ rd <= 0x1.fffffep127 /\ r in [0, 0x1.fffffep127] /\ cmi in [1, 255]
  -> rd >= 0 /\ cm - cmi in [0, 0] /\ s in [0, 0x1.fffffep127] }
