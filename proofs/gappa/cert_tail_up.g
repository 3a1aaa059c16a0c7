# [CERT-EK-01] [CERT-EK-04] spec/bounds/cert.md 4, 6a: tail_up(a, Delta) >= A(alpha, Delta), Eq. 14 in odds form, upward in binary64.
# Models: ref/fast/cert_step.c tail_up, for 0 < a < 1 (a <= 0 returns 0, a >= 1 returns 1,
#   both bounds of A): `x = up2(exp(up(2.0 * delta))); return up(1.0 / dn(1.0 + dn(dn(1.0 - a)
#   / up(x * a))));` -- up(y) = nextafter(RN64(y), +inf) >= RU64(y) and dn(y) <= RD64(y) (the
#   neighbour of a nearest rounding lies beyond the directed one), so every step is modelled by
#   the directed rounding it dominates; the code's value is >= the model's (each step is
#   monotone in the right direction in its operands)
# Statement: alpha in (0, 1], a >= alpha, X = e^{2 Delta} in [1, 2^100], x >= X |- q = RD(RD(1 - a)
#   / RU(x a)) <= (1 - alpha)/(X alpha); RU(1 / RD(1 + q)) >= A = 1 / (1 + (1 - alpha)/(X alpha))
# x >= e^{2 Delta}: exp within 2 ulps, moved two steps up ([TR-CERT-LIBM]) at an argument
# up(2 Delta) >= 2 Delta (exp increasing).  a is the computed alpha^_T bound
# (cert_eval_up.g: au >= T/(T + S)), and A is increasing in alpha.
@ru = float<ieee_64, up>;
@rd = float<ieee_64, dn>;
a = float<ieee_64, ne>(a_);
x = float<ieee_64, ne>(x_);
q = rd(rd(1 - a) / ru(x * a));
tu = ru(1 / rd(1 + q));
Q = (1 - AE) / (X * AE);
TA = 1 / (1 + Q);
{ AE in [0x1p-1000, 1] /\ a - AE in [0, 1] /\ a in [0, 1] /\ X in [1, 0x1p100] /\ x - X in [0, 0x1p100]
  -> q - Q <= 0 /\ tu - TA >= 0 }
q - Q -> (q - rd(1 - a) / ru(x * a)) + (rd(1 - a) - (1 - a)) / ru(x * a) - (a - AE) / ru(x * a) + (1 - AE) * (X * AE - ru(x * a)) / (ru(x * a) * X * AE);
tu - TA -> (tu - 1 / rd(1 + q)) + ((1 + Q) - rd(1 + q)) / (rd(1 + q) * (1 + Q));
