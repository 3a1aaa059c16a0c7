# [CERT-K8-04] spec/bounds/cert.md 1: below 2^-126 the quotient and the fmaf err by at most 2^-150.
# Models: the steps of cert_key_bound.g and cert_key_bound_fma.g when t/sigma or
#   c sigma + z lies below 2^-126 in magnitude
# Statement: |t/sigma| <= 2^-126 |- |RN32(t/sigma) - t/sigma| <= 2^-150;
#   |c sigma + z| <= 2^-126 |- |RN32(c sigma + z) - (c sigma + z)| <= 2^-150
# These are the absolute terms 2^-150 sigma and 2^-150 of bounds/cert.md 1, inside the
# 2^-16 sigma + 2^-149 of gamma.
@rnd = float<ieee_32, ne>;
@h = float<11, -24, ne>;
k = h(k_);
z = rnd(z_);
sg = rnd(sg_);
t = rnd(k - z);
qv = rnd(t / sg);
c = int<ne>(c_);
kh = rnd(c * sg + z);
{ sg in [0x1p-32, 514] /\ z in [-0x1p17, 0x1p17] /\ k in [-65504, 65504] /\ c in [-128, 127]
  /\ |t / sg| in [0, 0x1p-126] /\ |c * sg + z| in [0, 0x1p-126]
  -> qv - t / sg in [-0x1p-150, 0x1p-150] /\ kh - (c * sg + z) in [-0x1p-150, 0x1p-150] }
