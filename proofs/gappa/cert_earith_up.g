# [CERT-AR-01] [CERT-AR-02] spec/bounds/cert.md 7: E_arith evaluated upward in binary64 (earith_up) is >= the exact bound.
# Models: ref/fast/cert_step.c earith_up and gamma_up, line for line: up -> RU64, dn -> RD64
#   (up(y) = nextafter(RN64(y), +inf) >= RU64(y), dn(y) <= RD64(y); every step is monotone in
#   the right direction in its operands, so the code's value is >= the model's), up2(sqrt(d))
#   -> RU64(sqrt(d)) (sqrt is correctly rounded); the libm values lam = up2(-log1p(-ue)) >=
#   -ln(1 - eps_e) and tl = up2(tanh(up(lambda / 2))) >= tanh(Lambda / 2) are hypotheses
#   ([TR-CERT-LIBM]; tanh is increasing and the script proves lambda >= Lambda)
# Statement: Vh <= vh, PM <= pmax, R_s - 4 eps_s <= srange, LAM <= lam, tanh(Lambda/2) <= tl, D <=
#   5592405 (gamma_D < 1/2), 16 <= d <= 512, scale in [2^-126, 2^10] |- lambda >= Lambda = eps_s +
#   (1 + Nr)(2^-24 R_s + LAM); gamma_up(D) >= gamma_D, g/(1 - g) upward >= gamma_D/(1 - gamma_D);
#   earith_up >= 2 Vh tanh(Lambda/2) + 2 gamma_D Vh/(1 - gamma_D) + 2^-24 Vh (1 + 2 gamma_D/(1 -
#   gamma_D)) + 2 Vh nS (U + 1) 2^-148 + sqrt(d) 2^-150 + sqrt(d) D 2^-148, each partial sum too
# The exact bound is [CERT-AR-01] as bounds/cert.md 7 sums it (steps 4-6), with eps_s =
# gamma_{d+1} scale pmax + (scale d + 1) 2^-149 (step 1).  D > 5592405 makes the code return
# +inf (gamma_D >= 1/2), trivially an upper bound.  The hints below split each difference
# into rounding errors (>= 0 for RU) and differences of monotone operands; Gappa checks
# each split as an identity (assuming its denominators non-zero: they are >= 1/2).
@ru = float<ieee_64, up>;
@rd = float<ieee_64, dn>;
@r64 = float<ieee_64, ne>;
D = int<ne>(D_);
d = int<ne>(d_);
ns = int<ne>(ns_);
U = float<ieee_32, ne>(U_);
Nr = int<ne>(Nr_);
sc = float<ieee_32, ne>(sc_);
vh = r64(vh_);
pmax = r64(pmax_);
srange = r64(srange_);
lam = r64(lam_);
tl = r64(tl_);

# the code (earith_up), up -> ru, dn -> rd
nuD = D * 0x1p-24;
g = ru(nuD / rd(1 - nuD));
nud = (d + 1) * 0x1p-24;
gd = ru(nud / rd(1 - nud));
epss1 = ru(ru(gd * sc) * pmax);
epss = ru(epss1 + ru(ru(sc * d + 1) * 0x1p-149));
rs = ru(srange + ru(4 * epss));
lambda = ru(epss + ru((1 + Nr) * ru(ru(rs * 0x1p-24) + lam)));
gq = ru(g / rd(1 - g));
sq = ru(sqrt(d));
gg1 = ru(2 * ru(vh * tl));
gg2 = ru(gg1 + ru(2 * ru(vh * gq)));
gg3 = ru(gg2 + ru(ru(vh * 0x1p-24) * ru(1 + 2 * gq)));
gg4 = ru(gg3 + ru(ru(2 * vh) * ru(ns * ru((U + 1) * 0x1p-148))));
gg5 = ru(gg4 + ru(sq * 0x1p-150));
gg = ru(gg5 + ru(ru(sq * D) * 0x1p-148));

# the exact bound (spec/bounds/cert.md 7); Vh <= vh, PM <= pmax, SR <= srange
G = nuD / (1 - nuD);
Gd = nud / (1 - nud);
EPS = Gd * sc * PM + (sc * d + 1) * 0x1p-149;
RS = SR + 4 * EPS;
LL = EPS + (1 + Nr) * (RS * 0x1p-24 + LAM);
GQ = G / (1 - G);
GG1 = 2 * Vh * TH;
GG2 = GG1 + 2 * Vh * GQ;
GG3 = GG2 + Vh * 0x1p-24 * (1 + 2 * GQ);
GG4 = GG3 + 2 * Vh * ns * (U + 1) * 0x1p-148;
GG5 = GG4 + sqrt(d) * 0x1p-150;
E = 2 * Vh * TH + 2 * Vh * GQ + Vh * 0x1p-24 * (1 + 2 * GQ) + 2 * Vh * ns * (U + 1) * 0x1p-148
    + sqrt(d) * 0x1p-150 + sqrt(d) * D * 0x1p-148;

{ D in [1, 5592405] /\ d in [16, 512] /\ ns in [1, 0x1p24] /\ U in [0, 0x1p22] /\ Nr in [0, 0x1p24]
  /\ sc in [0x1p-126, 0x1p10] /\ Vh in [0, 0x1p21] /\ vh - Vh in [0, 0x1p21]
  /\ PM in [0, 0x1p42] /\ pmax - PM in [0, 0x1p42] /\ SR in [0, 0x1p60] /\ srange - SR in [0, 0x1p60]
  /\ LAM in [0, 1] /\ lam - LAM in [0, 1] /\ TH in [0, 1] /\ tl - TH in [0, 1]
  -> lambda - LL >= 0 /\ g - G >= 0 /\ gq - GQ >= 0 /\ gg1 - GG1 >= 0 /\ gg2 - GG2 >= 0 /\ gg3 - GG3 >= 0
     /\ gg4 - GG4 >= 0 /\ gg5 - GG5 >= 0 /\ gg - E >= 0 }
g - G -> (g - nuD / rd(1 - nuD)) + nuD * ((1 - nuD) - rd(1 - nuD)) / (rd(1 - nuD) * (1 - nuD));
gq - GQ -> (gq - g / rd(1 - g)) + (g - G) / rd(1 - g) + G * (((1 - g) - rd(1 - g)) + (g - G)) / (rd(1 - g) * (1 - G));
gg1 - GG1 -> (gg1 - 2 * ru(vh * tl)) + 2 * (ru(vh * tl) - vh * tl) + 2 * (vh * (tl - TH) + TH * (vh - Vh));
gg2 - GG2 -> (gg2 - (gg1 + ru(2 * ru(vh * gq)))) + (gg1 - GG1) + (ru(2 * ru(vh * gq)) - 2 * ru(vh * gq)) + 2 * (ru(vh * gq) - vh * gq) + 2 * (vh * (gq - GQ) + GQ * (vh - Vh));
gg3 - GG3 -> (gg3 - (gg2 + ru(ru(vh * 0x1p-24) * ru(1 + 2 * gq)))) + (gg2 - GG2) + (ru(ru(vh * 0x1p-24) * ru(1 + 2 * gq)) - ru(vh * 0x1p-24) * ru(1 + 2 * gq)) + ru(vh * 0x1p-24) * ((ru(1 + 2 * gq) - (1 + 2 * gq)) + 2 * (gq - GQ)) + (1 + 2 * GQ) * ((ru(vh * 0x1p-24) - vh * 0x1p-24) + (vh - Vh) * 0x1p-24);
gg4 - GG4 -> (gg4 - (gg3 + ru(ru(2 * vh) * ru(ns * ru((U + 1) * 0x1p-148))))) + (gg3 - GG3) + (ru(ru(2 * vh) * ru(ns * ru((U + 1) * 0x1p-148))) - ru(2 * vh) * ru(ns * ru((U + 1) * 0x1p-148))) + ru(2 * vh) * ((ru(ns * ru((U + 1) * 0x1p-148)) - ns * ru((U + 1) * 0x1p-148)) + ns * (ru((U + 1) * 0x1p-148) - (U + 1) * 0x1p-148)) + ns * (U + 1) * 0x1p-148 * ((ru(2 * vh) - 2 * vh) + 2 * (vh - Vh));
gg5 - GG5 -> (gg5 - (gg4 + ru(sq * 0x1p-150))) + (gg4 - GG4) + (ru(sq * 0x1p-150) - sq * 0x1p-150) + (sq - sqrt(d)) * 0x1p-150;
gg - E -> (gg - (gg5 + ru(ru(sq * D) * 0x1p-148))) + (gg5 - GG5) + (ru(ru(sq * D) * 0x1p-148) - ru(sq * D) * 0x1p-148) + ((ru(sq * D) - sq * D) + D * (sq - sqrt(d))) * 0x1p-148;
