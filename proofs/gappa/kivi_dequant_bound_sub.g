# [KIVI-B-03] spec/bounds/kivi.md (b), (H): a sum p + z below 2^-126 is exact, so |y - v| = |p - c s|.
# Models: y = RN32(p + z), p = RN32(c s) as in kivi_dequant_bound.g, the case |p + z| < 2^-126
# Statement: c integer in [1, 255], s binary32 in [2^-126, 2^120], z binary32, |p + z| <=
#   2^-126 |- RN32(p + z) == p + z; (p - c s)/(c s) in [-2^-24, 2^-24]
# (H) of bounds/kivi.md: p and z are multiples of 2^-149, and so is their sum, which in the
# subnormal range is a binary32 number.  Hence |y - v| = |p - c s| <= 2^-24 c s <= B.
@rnd = float<ieee_32, ne>;
c = int<ne>(c_);
s = rnd(s_);
z = rnd(z_);
p = rnd(c * s);
y = rnd(p + z);
{ c in [1, 255] /\ s in [0x1p-126, 0x1p120] /\ z in [-0x1.fffffep127, 0x1.fffffep127]
  /\ |p + z| in [0, 0x1p-126]
  -> y - (p + z) in [0, 0] /\ (p - c * s) / (c * s) in [-0x1p-24, 0x1p-24] }
