# [CERT-EK-01] [CERT-EK-04] spec/bounds/cert.md 5, 6a: E_key evaluated upward in binary64 is >= 2 Vmax (t + A (1 - t)) (sparse) and >= each term of the paper variant's min.
# Models: ref/fast/cert_step.c rung_bounds, E_key: sparse `up(up(2.0 * vmax) * up(t_up +
#   up(tail_up(au, delta) * up(1.0 - t_dn))))` (it read dn(1.0 - t_dn) before, see below); paper `g = up(up(up2(expm1(up(2 delta))) + up2(expm1(delta))) / 2);
#   a = up(tail_up(au, delta) * g); up(up(2.0 * vmax) * (a < t_up ? a : t_up))`; up -> RU64,
#   dn -> RD64 as in cert_tail_up.g
# Statement: V <= vm, t_dn <= T <= t_up, T in [0, 1], A <= au, A in [0, 1] |- RU(t_up + RU(au
#   RU(1 - t_dn))) >= T + A (1 - T); RU(RU(2 vm) .) >= 2 V (T + A (1 - T)); paper: G = (E2 + E1)/2
#   with E2, E1 the exact e^{2 Delta} - 1, e^Delta - 1 <= the code's e2, e1: RU(RU(2 vm) RU(au
#   RU(RU(e2 + e1)/2))) >= 2 V A G and RU(RU(2 vm) t_up) >= 2 V T
# vmax >= Vmax: the stored nu_b are RU32 of the norms ([CERT-ANN-02], exact decision);
# t_up >= t >= t_dn: tanh within 2 ulps, moved two steps ([TR-CERT-LIBM]); au >= alpha^_T
# and tail_up >= A: cert_eval_up.g, cert_tail_up.g; A is increasing in alpha.  The paper
# variant's min is monotone, so the code's min(a, t_up) bounds min(A G, T) from above.
# The former dn(1.0 - t_dn): t_dn <= t gives 1 - t_dn >= 1 - t, an upper bound of 1 - t,
# which dn then rounds DOWN, possibly below 1 - t.  The mutant of this script with RD(1 -
# t_dn) fails; that code's sum up(t + up(A dn(1.0 - t))) fell below t + A (1 - t) on 9190
# of 300000 random binary64 t in [0, 1/2), A in [1/2, 1] (t_dn = t_up = t, as the libm steps
# allow when tanh is a binary64 number).  The full E_key of that code stayed >= the exact value
# on 300000 random (t, A, Vmax) with t_dn = t_up = t (the steps up(2.0 * vmax) and the final
# up each add at least half an ulp), but that compensation is not what this script proves.
@ru = float<ieee_64, up>;
@rd = float<ieee_64, dn>;
vm = float<ieee_64, ne>(vm_);
tu = float<ieee_64, ne>(tu_);
td = float<ieee_64, ne>(td_);
au = float<ieee_64, ne>(au_);
e2 = float<ieee_64, ne>(e2_);
e1 = float<ieee_64, ne>(e1_);
om = ru(1 - td);
pr = ru(au * om);
sm = ru(tu + pr);
P = ru(2 * vm);
ek = ru(P * sm);
g = ru(ru(e2 + e1) / 2);
ap = ru(au * g);
ekp = ru(P * ap);
ekt = ru(P * tu);
X = T + A * (1 - T);
G = (E2 + E1) / 2;
{ V in [0, 0x1p21] /\ vm - V in [0, 0x1p21] /\ T in [0, 1] /\ tu - T in [0, 1] /\ T - td in [0, 1] /\ td in [0, 1]
  /\ A in [0, 1] /\ au - A in [0, 1] /\ E2 in [0, 0x1p100] /\ e2 - E2 in [0, 0x1p100] /\ E1 in [0, 0x1p50] /\ e1 - E1 in [0, 0x1p50]
  -> sm - X >= 0 /\ ek - 2 * V * X >= 0 /\ ekp - 2 * V * A * G >= 0 /\ ekt - 2 * V * T >= 0 }
sm - X -> (sm - (tu + pr)) + (tu - T) + (pr - au * om) + au * (om - (1 - td)) + au * (T - td) + (1 - T) * (au - A);
ek - 2 * V * X -> (ek - P * sm) + P * (sm - X) + X * ((P - 2 * vm) + 2 * (vm - V));
ekp - 2 * V * A * G -> (ekp - P * ap) + P * ((ap - au * g) + au * ((g - ru(e2 + e1) / 2) + (ru(e2 + e1) - (e2 + e1)) / 2 + ((e2 - E2) + (e1 - E1)) / 2) + G * (au - A)) + A * G * ((P - 2 * vm) + 2 * (vm - V));
ekt - 2 * V * T -> (ekt - P * tu) + P * (tu - T) + T * ((P - 2 * vm) + 2 * (vm - V));
