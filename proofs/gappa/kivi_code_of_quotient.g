# [TR-GOAL-FLOAT] [KIVI-Q-04] code_of: the quotient reaching kvq_round_int lies in [-1, 256].
# Models: ref/fast/kivi.c:166-183 `cmax = (float)kvq_code_max(bits); t = xv - z;
#   (t = copysignf(FLT_MAX, t) when isinf(t)); q = t / s; if (q > cmax + 1.0f) ...;
#   if (q < -1.0f) ...; c = kvq_round_int(q, ...)`
# Goals: typed_code_of_call_kvq_round_int_requires_finite
#   typed_code_of_call_kvq_round_int_requires_range
# Statement: cmax in {1,3,15,255} |- RN32(cmax + 1) == cmax + 1 <= 256; |t| <= FLT_MAX,
#   s in [2^-149, FLT_MAX] |- t / s is a real in [-2^277, 2^277]
# So q = RN32(t / s) is a rounding of a real: finite or +-inf, never NaN (IEEE 754 7.2:
# only 0/0 and inf/inf are invalid divisions).  An infinite q fails one of the two tests
# (+inf > 256, -inf < -1), so the q that reaches kvq_round_int is finite with
# -1 <= q <= cmax + 1 <= 256 < 2^31: its `finite` and `range` preconditions.
@rnd = float<ieee_32, ne>;
cmi = int<ne>(cmi_);
cm = rnd(cmi);
c1 = rnd(cm + 1);
t = rnd(t_);
s = rnd(s_);
{ cmi in [1, 255] /\ t in [-0x1.fffffep127, 0x1.fffffep127] /\ s in [0x1p-149, 0x1.fffffep127]
  -> c1 - (cmi + 1) in [0, 0] /\ c1 in [2, 256] /\ t / s in [-0x1p277, 0x1p277] }
