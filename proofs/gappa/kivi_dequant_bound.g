# [KIVI-B-03] [KIVI-D-01] spec/bounds/kivi.md (b): |RN32(RN32(c s) + z) - (c s + z)| <= B, product then sum.
# Models: the product-then-sum evaluation of the dequantized value, y = RN32(p + z),
#   p = RN32(c s) (bounds/kivi.md (b); the pinned fmaf of ref/fast/kivi.c has one rounding
#   and is covered with room), for a code 1 <= c <= 255 and a normal scale s (c = 0 gives
#   y = RN32(z) = z exactly), the sum not below 2^-126 (the other case:
#   kivi_dequant_bound_sub.g)
# Statement: c integer in [1, 255], s binary32 in [2^-126, 2^120], z binary32, |p + z| in
#   [2^-126, 2^128] |- e1 = (p - c s)/(c s), e2 = (y - (p + z))/(p + z) in [-2^-24, 2^-24];
#   e1 + e2 + e1 e2 in +-(2^-23 + 2^-48); y - (c s + z) == c s (e1 + e2 + e1 e2) + z e2
# Hence |y - v| <= (2^-23 + 2^-48) c s + 2^-24 |z| <= (2^-23 + 2^-46)(|c s| + |z|) <= B
# (triangle inequality; the 2^-149 of B is not even needed here).  Gappa checks the
# identity as a rewriting, with c s != 0 and p + z != 0, which the hypotheses give.
# s <= 2^120: bounds/kivi.md (b) "no intermediate overflow" (s < 2^120, 2^124, 2^127 for
# cmax = 255, 15, 3; the bound is the same for the wider ranges of the smaller cmax).
@rnd = float<ieee_32, ne>;
c = int<ne>(c_);
s = rnd(s_);
z = rnd(z_);
p = rnd(c * s);
y = rnd(p + z);
e1 = (p - c * s) / (c * s);
e2 = (y - (p + z)) / (p + z);
{ c in [1, 255] /\ s in [0x1p-126, 0x1p120] /\ z in [-0x1.fffffep127, 0x1.fffffep127]
  /\ |p + z| in [0x1p-126, 0x1p128]
  -> e1 in [-0x1p-24, 0x1p-24] /\ e2 in [-0x1p-24, 0x1p-24]
     /\ e1 + e2 + e1 * e2 in [-0x1.0000008p-23, 0x1.0000008p-23]
     /\ y - (c * s + z) - (c * s * (e1 + e2 + e1 * e2) + z * e2) in [0, 0] }
y - (c * s + z) - (c * s * (e1 + e2 + e1 * e2) + z * e2) -> 0;
