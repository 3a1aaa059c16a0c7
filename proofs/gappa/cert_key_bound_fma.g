# [CERT-K8-04] [CERT-K8-03] spec/bounds/cert.md 1, step 6 and the total: k - kh splits into sigma (w - qv), sigma (qv - c) and the fmaf error.
# Models: ref/fast/cert.c kvq_cert_dequantize_keys `r = fmaf((float)code, sigma[m], z[m]);`
#   (one rounding [TR-LIBM-FMA]) for a code |c| <= 128, sigma, z as in cert_key_bound.g,
#   |c sigma + z| not below 2^-126 (the other case: cert_key_bound_tiny.g)
# Statement: c integer in [-128, 128], sigma, z binary32, |c sigma + z| in [2^-126, 2^20]
#   |- e6 = (kh - (c sigma + z))/(c sigma + z) in [-2^-24, 2^-24];
#   k - kh == sigma ((k - z)/sigma - qv) + sigma (qv - c) - e6 (c sigma + z)
# With cert_key_bound.g: |k - kh| <= sigma/2 + (2^-23 + 2^-48)|k - z| + 2^-24 (128 sigma +
# |z|), and |k - z| <= |u| + |l| + |z| for l <= k <= u: termwise below sigma/2 + gamma,
# gamma = 2^-22 (|u| + |l| + |z|) + 2^-16 sigma + 2^-149 (bounds/cert.md 1, "Total").
@rnd = float<ieee_32, ne>;
z = rnd(z_);
sg = rnd(sg_);
c = int<ne>(c_);
kh = rnd(c * sg + z);
e6 = (kh - (c * sg + z)) / (c * sg + z);
{ sg in [0x1p-32, 514] /\ z in [-0x1p17, 0x1p17] /\ c in [-128, 128] /\ |c * sg + z| in [0x1p-126, 0x1p20]
  -> e6 in [-0x1p-24, 0x1p-24]
     /\ k - kh - (sg * ((k - z) / sg - qv) + sg * (qv - c) - e6 * (c * sg + z)) in [0, 0] }
k - kh - (sg * ((k - z) / sg - qv) + sg * (qv - c) - e6 * (c * sg + z)) -> 0;
