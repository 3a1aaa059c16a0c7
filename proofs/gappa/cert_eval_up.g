# [CERT-EV-01] [CERT-EV-03] [CERT-SEL-02] spec/bounds/cert.md 9: E_val and alpha^_T evaluated upward in binary64 are >= the exact values.
# Models: ref/fast/cert_step.c rung_bounds: `au = up(1.0 / dn(1.0 + dn(sl / tu)))` (alpha^_T
#   = T/(T + S)); sparse `rho = up(p1->eu[b] / sl)` (rho_b = E_b / E_S), paper `rho =
#   up(e2d * up(p1->eu[b] / dn(sl + tl)))` (rho'_b <= e^{2 Delta} E_b / E_all); one step of
#   `rsum = up(rsum + up(rho * ch->eta[b]))`; up -> RU64, dn -> RD64 as in cert_tail_up.g
# Statement: E_b <= eu, sl <= E_S, tl <= E_T, e^{2 Delta} <= e2d, T <= tu |- RU(eu / sl) >= E_b / E_S;
#   RU(e2d RU(eu / RD(sl + tl))) >= e^{2 Delta} E_b / (E_S + E_T); R <= rs, rho_b <= rho, eta_b
#   <= eta |- RU(rs + RU(rho eta)) >= R + rho_b eta_b; RU(1 / RD(1 + RD(sl / tu))) >= T / (T + S)
# The block masses' bounds eu (upward sums) and sl, tl (downward sums) come from Phase 1
# ([CERT-SEL-02]); eta_b >= the exact norm (RU32, [CERT-ANN-01]); e2d = up2(exp(up(2 Delta)))
# ([TR-CERT-LIBM]).  The step, repeated over the attended blocks from rsum = 0, gives rsum >=
# sum rho_b eta_b by induction; capping rho at 1 and taking min(rsum, max eta) keep upper
# bounds (rho_b <= 1, and E_val <= max eta' [CERT-EV-02]).
@ru = float<ieee_64, up>;
@rd = float<ieee_64, dn>;
eu = float<ieee_64, ne>(eu_);
sl = float<ieee_64, ne>(sl_);
tl = float<ieee_64, ne>(tl_);
e2d = float<ieee_64, ne>(e2d_);
eta = float<ieee_32, ne>(eta_);
rs = float<ieee_64, ne>(rs_);
tu = float<ieee_64, ne>(tu_);
rho = ru(eu / sl);
rhp = ru(e2d * ru(eu / rd(sl + tl)));
rs1 = ru(rs + ru(rho * eta));
au = ru(1 / rd(1 + rd(sl / tu)));
{ EB in [0, 0x1p100] /\ eu - EB in [0, 0x1p100] /\ ES in [0x1p-900, 0x1p100] /\ ES - sl in [0, 0x1p100] /\ sl in [0x1p-900, 0x1p100]
  /\ ET in [0, 0x1p100] /\ ET - tl in [0, 0x1p100] /\ tl in [0, 0x1p100] /\ X2 in [1, 0x1p100] /\ e2d - X2 in [0, 0x1p100]
  /\ ETA in [0, 0x1p20] /\ eta - ETA in [0, 0x1p20] /\ R in [0, 0x1p30] /\ rs - R in [0, 0x1p30] /\ RHO in [0, 1] /\ rho - RHO in [0, 0x1p1000]
  /\ TT in [0x1p-900, 0x1p100] /\ tu - TT in [0, 0x1p100]
  -> rho - EB / ES >= 0 /\ rhp - X2 * EB / (ES + ET) >= 0 /\ rs1 - (R + RHO * ETA) >= 0
     /\ ES / TT - rd(sl / tu) >= 0 /\ au - TT / (TT + ES) >= 0 }
rho - EB / ES -> (rho - eu / sl) + (eu - EB) / sl + EB * (ES - sl) / (sl * ES);
rhp - X2 * EB / (ES + ET) -> (rhp - e2d * ru(eu / rd(sl + tl))) + e2d * ((ru(eu / rd(sl + tl)) - eu / rd(sl + tl)) + (eu - EB) / rd(sl + tl) + EB * ((ES + ET) - rd(sl + tl)) / (rd(sl + tl) * (ES + ET))) + (e2d - X2) * EB / (ES + ET);
rs1 - (R + RHO * ETA) -> (rs1 - (rs + ru(rho * eta))) + (rs - R) + (ru(rho * eta) - rho * eta) + rho * (eta - ETA) + ETA * (rho - RHO);
ES / TT - rd(sl / tu) -> (ES - sl) / TT + sl * (tu - TT) / (TT * tu) + (sl / tu - rd(sl / tu));
au - TT / (TT + ES) -> (au - 1 / rd(1 + rd(sl / tu))) + (((1 + rd(sl / tu)) - rd(1 + rd(sl / tu))) + (ES / TT - rd(sl / tu))) / (rd(1 + rd(sl / tu)) * (1 + ES / TT));
