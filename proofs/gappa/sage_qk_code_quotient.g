# [TR-GOAL-SAGE-FLOAT] [SAGE-Q-03] [SAGE-LEM-03..04] qk_code: |RN32(x/s)| <= 128, |RN32(q +- 1/2)| <= 129.
# Models: ref/fast/sage.c:168, 173 `q = x / s; ... float t = q >= 0.0f ? q + 0.5f : q - 0.5f;`
#   under the precondition `quotient`: s > 0 ==> |x| <= (cmax + 1) s, cmax in {7, 127}
# Goals: typed_qk_code_assert_q_range typed_qk_code_assert_t_range
# Statement: x, s binary32, s > 0, x / s in [-128, 128] |- q = RN32(x / s) in [-128, 128];
#   RN32(q + 1/2), RN32(q - 1/2) in [-129, 129]
# |x| <= (cmax + 1) s with s > 0 is x / s in [-(cmax + 1), cmax + 1], inside [-128, 128]
# for both widths.  Results Gappa bounds by 129 are the IEEE results, finite (`q_range`'s
# \is_finite).
@rnd = float<ieee_32, ne>;
x = rnd(x_);
s = rnd(s_);
q = rnd(x / s);
tp = rnd(q + 0.5);
tm = rnd(q - 0.5);
{ s in [0x1p-149, 0x1.fffffep127] /\ x / s in [-128, 128]
  -> q in [-128, 128] /\ tp in [-129, 129] /\ tm in [-129, 129] }
