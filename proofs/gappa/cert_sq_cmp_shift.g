# [TR-GOAL-CERT-FLOAT] [CERT-ANN-01] sq_cmp: the frexpf exponent of 1 <= y < 2^60 is in [1, 60].
# Models: ref/fast/cert.c sq_cmp `if (y < 1.0f) ...; if (y >= 0x1p60f) ...;
#   mant = (uint64_t)ldexpf(frexpf(y, &e), 24); e -= 24; ... u128_shl(lhs, 2 * e) /
#   u128_shl(n, -2 * e)`
# Statement: y binary32 in [1, 2^60), m = frexpf mantissa in [1/2, 1) |- 2^e = y / m in
#   (1, 2^61); m 2^24 in [2^23, 2^24)
# frexpf (C11 F.10.3.4): y = m 2^e exactly, 1/2 <= m < 1.  2^e = y / m is a power of two
# strictly between 1 and 2^61, so 1 <= e <= 60; after `e -= 24`, -23 <= e <= 36, and the
# shift counts 2e (e >= 0) and -2e (e < 0) are at most 72 and 46: below 128, u128_shl's
# `s_range`.  mant = m 2^24 is an integer in [2^23, 2^24) (exact scaling).  WP proves
# both s_range goals (and the assertion e_range) from the exponent [TR-LIBM-FREXP]
# states (|y| >= 2^k exactly when e > k); this script checks the same exponent range
# from C11's y = m 2^e, independently of that contract.
@rnd = float<ieee_32, ne>;
y = rnd(y_);
m = rnd(m_);
p = y / m;
mant = rnd(m * 0x1p24);
{ y in [1, 0x1.fffffep59] /\ m in [0.5, 0x1.fffffep-1]
  -> p in [1.00000005, 0x1.fffffep60] /\ mant in [8388608, 16777215] }
