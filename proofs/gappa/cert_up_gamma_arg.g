# [TR-GOAL-CERT-FLOAT] [CERT-DLT-04] up_gamma: a = up(up(|u| + |l|) + |z|) is finite for |z| <= 2^127.
# Models: ref/fast/cert.c up_gamma `a = up_add(up_add(fabsf(u), fabsf(l)), fabsf(z));
#   if (!isfinite(a)) return INFINITY; return up_add(up_add(ldexpf(a, -22), ...` with
#   up_add(x, y) = nextafterf(x + y, +inf)
# Statement: |u|, |l| <= 65504, |z| <= 2^127, up(x) <= x (1 + 2^-23) + 2^-149 |- a in [0, 2^127 + 2^105], below FLT_MAX
# nextafterf(x, +inf) of a finite x >= 0 is x plus one ulp: at most x 2^-23 for a
# normal x, 2^-149 below (C11 F.10.8.3); k1, k2, d1, d2 stand for those steps.  The
# keys are binary16 (kvq_cert_delta checks them, [CERT-L-02]); z is the stored key
# offset, which kvq_certi_key_meta_ok checks for finiteness only.
# For z = FLT_MAX, RN32(|u| + |l| + FLT_MAX) = FLT_MAX and nextafterf(FLT_MAX, +inf) =
# +inf: up_gamma returns +inf before ldexpf (an upward bound, sound; WP proves the
# calls' `finite_arg` under that test, and check_cert's special_gamma_huge_offset runs
# the case).  This script shows the test is not taken for |z| <= 2^127, which covers
# every offset stored from binary16 keys: z = RN32(l + 128 sigma) lies between l and u
# up to rounding, |z| < 2^17; its mutant (any finite z) fails.
@rnd = float<ieee_32, ne>;
ua = float<11, -24, ne>(ua_);
la = float<11, -24, ne>(la_);
za = rnd(za_);
s1 = rnd(ua + la);
a1 = s1 + k1 * s1 + d1;
s2 = rnd(a1 + za);
a = s2 + k2 * s2 + d2;
{ ua in [0, 65504] /\ la in [0, 65504] /\ za in [0, 0x1p127]
  /\ k1 in [0, 0x1p-23] /\ k2 in [0, 0x1p-23] /\ d1 in [0, 0x1p-149] /\ d2 in [0, 0x1p-149]
  -> a in [0, 0x1.000004p127] }
