# [SAGE-LEM-03] [SAGE-Q-02] [SAGE-Q-03] SAGE per-element quantization: |RN32(x / RN32(m / cmax))| < cmax + 1/2, no clamp.
# Models: ref/fast/sage.c qk_scale `s = m / (float)kvq_sage_cmax(bits)` (paper rounding,
#   s >= 2^-126) and qk_code `q = x / s;` for |x| <= m (m the group maximum)
# Statement: cmax in {7, 127}, m / cmax in [2^-126, 2^127], x / m in [-1, 1], |x / s| in
#   [2^-126, 256] |- es = (s - m/cmax)/(m/cmax), eq = (q - x/s)/(x/s) in [-2^-24, 2^-24];
#   for r in [-1, 1] and a, b in [-2^-24, 2^-24]: r (1 + a)/(1 + b) in +-(1 + 2^-22)
# q / cmax = (x/m)(1 + eq)/(1 + es) (s = (m/cmax)(1 + es), q = (x/s)(1 + eq)), so |q| <=
# cmax (1 + 2^-22) < cmax + 1/2 (cmax 2^-22 < 1/2): RNE(q) is in [-cmax, cmax] and the
# clamp never acts.  (spec/sage.md states the sharper |q| <= cmax (1 + 2^-23), which uses
# that q lies on the binary32 grid; the real factor (1 + 2^-24)/(1 - 2^-24) proved here
# is enough for the lemma's conclusion.)  A quotient below 2^-126 rounds to a code 0.
@rnd = float<ieee_32, ne>;
cm = int<ne>(cm_);
m = rnd(m_);
x = rnd(x_);
s = rnd(m / cm);
q = rnd(x / s);
es = (s - m / cm) / (m / cm);
eq = (q - x / s) / (x / s);
{ cm in [7, 127] /\ m / cm in [0x1p-126, 0x1p127] /\ x / m in [-1, 1] /\ |x / s| in [0x1p-126, 256]
  /\ r in [-1, 1] /\ a in [-0x1p-24, 0x1p-24] /\ b in [-0x1p-24, 0x1p-24]
  -> es in [-0x1p-24, 0x1p-24] /\ eq in [-0x1p-24, 0x1p-24]
     /\ r * (1 + a) / (1 + b) in [-0x1.000004p0, 0x1.000004p0] }
