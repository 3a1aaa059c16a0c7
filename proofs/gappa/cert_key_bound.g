# [CERT-K8-04] spec/bounds/cert.md 1, steps 5 and the rounding part: qv = RN32(RN32(k - z) / sigma) near w = (k - z)/sigma.
# Models: ref/fast/cert.c key_code: `t = k - z; qv = t / sigma;` then the code c = RNE(qv)
#   (unclamped: binary16 keys never clamp, [CERT-K8-02]), for a binary16 key k, the
#   stored sigma (normal, <= 131008/255 < 514) and offset z (|z| < 2^17), a quotient not
#   below 2^-126 (the other case: cert_key_bound_tiny.g)
# Statement: k binary16, sigma, z binary32, |t/sigma| in [2^-126, 256], |k - z| >= 2^-149
#   |- e4 = (t - (k - z))/(k - z), e5 = (qv - t/sigma)/(t/sigma) in [-2^-24, 2^-24];
#   e4 + e5 + e4 e5 in +-(2^-23 + 2^-48); qv - w == w (e4 + e5 + e4 e5); |qv - c| <= 1/2
# So sigma |w - c| <= sigma/2 + sigma |qv - w| <= sigma/2 + (2^-23 + 2^-48)|k - z|, the
# "not clamped" case of bounds/cert.md 1; the reconstruction kh = fmaf(c, sigma, z) is
# cert_key_bound_fma.g.  t = RN32(k - z) has relative error only (H); k == z gives t = 0
# and qv = 0 exactly.
@rnd = float<ieee_32, ne>;
@h = float<11, -24, ne>;
k = h(k_);
z = rnd(z_);
sg = rnd(sg_);
t = rnd(k - z);
qv = rnd(t / sg);
c = int<ne>(qv);
w = (k - z) / sg;
e4 = (t - (k - z)) / (k - z);
e5 = (qv - t / sg) / (t / sg);
{ sg in [0x1p-32, 514] /\ z in [-0x1p17, 0x1p17] /\ k in [-65504, 65504]
  /\ |t / sg| in [0x1p-126, 256] /\ |k - z| in [0x1p-149, 0x1p18]
  -> e4 in [-0x1p-24, 0x1p-24] /\ e5 in [-0x1p-24, 0x1p-24]
     /\ e4 + e5 + e4 * e5 in [-0x1.0000008p-23, 0x1.0000008p-23]
     /\ qv - c in [-0.5, 0.5]
     /\ (qv - w) - w * (e4 + e5 + e4 * e5) in [0, 0] }
(qv - w) - w * (e4 + e5 + e4 * e5) -> 0;
