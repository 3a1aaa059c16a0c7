#!/usr/bin/env python3
"""torch_kivi.py -- a KIVI quantization kernel in PyTorch (optionally Triton),
judged by kvq in results-file mode.

    build/rel/kvq gen --family kivi --level standard -o kivi.vec
    python3 gpu/examples/torch_kivi.py --vectors kivi.vec -o torch.results
    build/rel/kvq verify --vectors kivi.vec --results torch.results

Every kivi-quant case is run on the GPU in float32 tensors, following the
pinned sequence of spec/kivi.md: per-group min and max, range, scale
(a division, [KIVI-Q-02]), offset, binary16 metadata when the case says
meta=f16 ([KIVI-M-02]), codes by round-half-even (or half-away) of
(x - z) / s, clamp, then dequantization RN32(c*s + z) with one rounding
([KIVI-D-01]).  The codes are packed LSB first in torch ([LAY-PACK-01]);
kvqio (conformance/python) reads the vectors and writes the results file.

Two things a straightforward torch port gets wrong, and which kvq catches
(measured results in gpu/examples/README.md):

- `r / 15.0` with a Python scalar divisor is evaluated by PyTorch's CUDA
  kernel as a multiplication by the reciprocal 1/15, which can differ from the
  division in the last bit; the scale is stored metadata, compared bit for bit
  at both levels, so every divisor here is a tensor.
- torch has no float32 fma.  `c*s + z` as two tensor ops rounds twice (within
  the bounded level's bound, not the exact level's single rounding); the
  single rounding is obtained in float64: c*s is exact there, the sum is made
  round-to-odd with TwoSum and nextafter, and the conversion to float32 is then
  the correctly rounded fmaf.  With --dequant triton a Triton kernel uses
  tl.fma instead.

--naive div|fma|both makes these mistakes on purpose; --reciprocal computes
the codes from t * (1/s) (passes `kvq verify --level bounded`, not exact).

The module imports torch only inside main(), so `--help` works without it.
"""

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (os.path.join(_HERE, "..", "..", "conformance", "python"),    # the source tree
           os.path.join(_HERE, "..", "python")):                        # $(PREFIX)/share/kvq
    if os.path.isfile(os.path.join(_p, "kvqio.py")) and _p not in sys.path:
        sys.path.append(_p)
import kvqio  # noqa: E402  (stdlib only)

F32_MIN_NORMAL = 2.0 ** -126
F16_MIN_NORMAL = 2.0 ** -14


class CaseError(Exception):
    """A case's status is an error: (status,)."""

    def __init__(self, status):
        Exception.__init__(self, status)
        self.status = status


def _round_int(torch, q, ties):
    """Round float32 q to an integer value [POL-TIE-01] / [POL-TIE-02]."""
    if ties == "even":
        return torch.round(q)                      # IEEE roundTiesToEven (rint)
    a = q.abs()
    fl = torch.floor(a)
    d = a - fl                                     # exact
    return torch.copysign(fl + (d >= 0.5).to(q.dtype), q)   # not floor(a + 0.5): that rounds


def _fma_f32_via_f64(torch, c, s, z):
    """RN32(c*s + z) with one rounding, from float64 tensor ops.

    c*s: a product of two binary32 values, exact in float64 (48 bits).  h =
    p + z rounds; TwoSum gives its exact error; if the error is nonzero and h's
    last bit is even, h moves one ulp towards the error (round-to-odd).  The
    float32 conversion of a round-to-odd float64 value is the correctly
    rounded result (53 >= 24 + 2).  Each line is its own kernel, so nothing is
    contracted into an FMA."""
    p = c.double() * s.double()
    z = z.double()
    h = p + z
    bb = h - p
    err = (p - (h - bb)) + (z - bb)
    even = (h.view(torch.int64) & 1) == 0
    towards = torch.where(err > 0, torch.full_like(h, float("inf")), torch.full_like(h, float("-inf")))
    h = torch.where((err != 0) & even, torch.nextafter(h, towards), h)
    return h.float()                               # cvt.rn.f32.f64; +-inf on overflow


_TRITON_FMA = None


def _fma_f32_triton(torch, c, s, z):
    """RN32(c*s + z) by a Triton kernel: tl.fma is one fma.rn.f32."""
    global _TRITON_FMA
    import triton
    import triton.language as tl
    if _TRITON_FMA is None:
        @triton.jit
        def fma_kernel(c_ptr, s_ptr, z_ptr, y_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = i < n
            y = tl.fma(tl.load(c_ptr + i, mask=m), tl.load(s_ptr + i, mask=m), tl.load(z_ptr + i, mask=m))
            tl.store(y_ptr + i, y, mask=m)
        _TRITON_FMA = fma_kernel
    c, s, z = (t.contiguous().float() for t in torch.broadcast_tensors(c, s, z))
    y = torch.empty_like(c)
    n = c.numel()
    _TRITON_FMA[(triton.cdiv(n, 1024),)](c, s, z, y, n, BLOCK=1024)
    return y


def kivi_quant(torch, case, device, dequant="torch", reciprocal=False, naive=""):
    """One kivi-quant case on the device: (status, output fields)."""
    v = case.values
    sh = kvqio.kivi_shape(case)
    if not kvqio.kivi_params_ok(sh):
        raise CaseError(kvqio.KVQ_E_PARAM)
    if not kvqio.kivi_shape_ok(sh):
        raise CaseError(kvqio.KVQ_E_SHAPE)
    T, D, G, bits = sh.tokens, sh.channels, sh.group, sh.bits
    cmax = float(kvqio.code_max(bits))
    nan_policy = v["overflow"] == "nan"
    f32 = torch.float32

    # x: array('f') (native byte order, bit-exact) -> a device tensor
    x = torch.frombuffer(bytearray(v["x"].tobytes()), dtype=f32).to(device)
    if not bool(torch.isfinite(x).all()):
        raise CaseError(kvqio.KVQ_E_NONFINITE)                  # [POL-NF-01]
    flags = 0
    sub = (x != 0) & (x.abs() < F32_MIN_NORMAL)                 # [POL-SN-01]
    if bool(sub.any()):
        flags |= kvqio.FLAG_SUBNORMAL
        if v["subnormal"] == "daz":
            x = torch.where(sub, torch.copysign(torch.zeros_like(x), x), x)

    # groups as rows, element i in column i [KIVI-L-03]
    if sh.grouping == "channel":
        xg = x.view(T // G, G, D).permute(0, 2, 1).reshape(-1, G)   # row tb*D + c
    else:
        xg = x.view(-1, G)                                          # row t*(D/G) + cb

    mn, mx = xg.amin(dim=1), xg.amax(dim=1)                    # [KIVI-Q-01]
    r = mx - mn                                                 # RN32 [KIVI-Q-02]
    big = torch.isinf(r)
    if bool(big.any()):
        if nan_policy:
            raise CaseError(kvqio.KVQ_E_RANGE)
        r = torch.where(big, torch.full_like(r, kvqio.F32_MAX), r)
        flags |= kvqio.FLAG_SATURATED
    if naive in ("div", "both"):  # a Python scalar divisor: PyTorch's CUDA kernel multiplies by 1/cmax
        s = r / cmax
    else:
        s = r / torch.full_like(r, cmax)                        # a tensor: a true division
    z = torch.where(mn == 0, torch.zeros_like(mn), mn)          # +0 offset [KIVI-Q-03]
    if sh.meta == "f16":                                        # RN16(s32), RN16(z32) [KIVI-M-02]
        s, z = s.half().float(), z.half().float()
        ov = torch.isinf(s) | torch.isinf(z)
        if bool(ov.any()):
            if nan_policy:
                raise CaseError(kvqio.KVQ_E_RANGE)
            flags |= kvqio.FLAG_SATURATED
            s = torch.where(torch.isinf(s), torch.copysign(torch.full_like(s, 65504.0), s), s)
            z = torch.where(torch.isinf(z), torch.copysign(torch.full_like(z, 65504.0), z), z)
        z = torch.where(z == 0, torch.zeros_like(z), z)
        s = torch.where(s < F16_MIN_NORMAL, torch.zeros_like(s), s)
    else:
        s = torch.where(s < F32_MIN_NORMAL, torch.zeros_like(s), s)
    zero_scale = s == 0                                         # [POL-ZR-01]
    if bool(zero_scale.any()):
        flags |= kvqio.FLAG_ZERO_SCALE

    # codes [KIVI-Q-04..06]
    live = ~zero_scale[:, None]
    t = xg - z[:, None]
    tinf = torch.isinf(t) & live
    if bool(tinf.any()):
        flags |= kvqio.FLAG_SATURATED
        t = torch.where(tinf, torch.copysign(torch.full_like(t, kvqio.F32_MAX), t), t)
    s_safe = torch.where(zero_scale, torch.ones_like(s), s)[:, None].expand_as(t)
    if reciprocal:          # deliberately not the pinned sequence: bounded level only
        q = t * (torch.ones_like(s_safe) / s_safe)
    else:
        q = t / s_safe
    k = _round_int(torch, q, v["ties"])
    clamped = ((k < 0) | (k > cmax)) & live
    if bool(clamped.any()):
        flags |= kvqio.FLAG_CLAMPED
    codes = torch.where(live, k.clamp(0, cmax), torch.zeros_like(k))

    # dequantize the stored codes and metadata [KIVI-D-01]
    if naive in ("fma", "both"):  # two float32 roundings: RN32(RN32(c*s) + z), not fmaf
        y = codes * s[:, None] + z[:, None]
    else:
        fma = _fma_f32_triton if dequant == "triton" else _fma_f32_via_f64
        y = fma(torch, codes, s[:, None].expand_as(codes), z[:, None].expand_as(codes))
    yinf = torch.isinf(y)
    if bool(yinf.any()):
        if nan_policy:
            raise CaseError(kvqio.KVQ_E_RANGE)
        flags |= kvqio.FLAG_SATURATED
        y = torch.where(yinf, torch.copysign(torch.full_like(y, kvqio.F32_MAX), y), y)
    if sh.grouping == "channel":
        y = y.view(T // G, D, G).permute(0, 2, 1).reshape(T, D)
    y = y.reshape(-1).contiguous()

    # pack LSB first: element j of each byte's 8/bits elements at bit j*bits [LAY-PACK-01]
    per = 8 // bits
    c8 = codes.to(torch.int32).view(codes.shape[0], G // per, per)
    shifts = torch.arange(per, device=c8.device, dtype=torch.int32) * bits
    packed = (c8 << shifts).sum(dim=2).to(torch.uint8).reshape(-1)

    out = [("flags", kvqio.encode_flags(flags)),
           ("codes", kvqio.encode_bytes(bytes(packed.cpu().tolist()))),
           ("scale", kvqio.encode_meta(s.cpu().tolist(), sh.meta)),
           ("zero", kvqio.encode_meta(z.cpu().tolist(), sh.meta)),
           ("deq", kvqio.encode_f32_words(y.view(torch.int32).cpu().tolist()))]
    return 0, out


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Run a PyTorch KIVI quantizer on the kivi-quant cases of a kvq vector file and "
                    "write a kvq results file; judge it with "
                    "`kvq verify --vectors FILE --results RESULTS`.")
    ap.add_argument("--vectors", required=True, help="kvq vector file (kvq gen --family kivi ...)")
    ap.add_argument("-o", "--out", required=True, help="results file to write")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda; 'cpu' to try it out)")
    ap.add_argument("--dequant", choices=("torch", "triton"), default="torch",
                    help="dequantization: float64 round-to-odd in torch (default) or a Triton tl.fma kernel")
    ap.add_argument("--reciprocal", action="store_true",
                    help="multiply by 1/s instead of dividing by s (passes --level bounded only)")
    ap.add_argument("--naive", choices=("div", "fma", "both"), default="",
                    help="the straightforward port, on purpose: r / cmax with a Python scalar (div), "
                         "c*s + z as two float32 operations (fma), or both (see README.md)")
    ap.add_argument("--subject", default=None, help="subject name in the results file")
    args = ap.parse_args(argv)

    try:
        import torch
    except ImportError:
        print("torch_kivi.py: PyTorch is not installed here (import torch failed); this example "
              "needs it (and a CUDA device, or --device cpu)", file=sys.stderr)
        return 2
    subject = args.subject or ("%s-kivi%s%s" % ("triton" if args.dequant == "triton" else "torch",
                                                "-recip" if args.reciprocal else "",
                                                "-naive-" + args.naive if args.naive else ""))
    try:
        vf = kvqio.read_vectors(args.vectors)
    except (OSError, ValueError) as e:
        print("torch_kivi.py: %s" % e, file=sys.stderr)
        return 2
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        # [VEC-RES-01]: the subject cannot run here; kvq counts every case SKIPPED
        with kvqio.ResultsWriter(args.out, subject, unavailable="no CUDA device visible to PyTorch") as w:
            pass
        print("torch_kivi.py: no CUDA device; wrote an 'unavailable' results file", file=sys.stderr)
        return 0
    device = torch.device(args.device)
    counts = {"ok": 0, "error": 0, "skipped": 0, "failed": 0}
    with kvqio.ResultsWriter(args.out, subject) as w:
        for c in vf:
            if c.op != "kivi-quant":
                w.skipped(c, "torch-kivi-has-no-" + c.op)
                counts["skipped"] += 1
                continue
            try:
                status, out = kivi_quant(torch, c, device, args.dequant, args.reciprocal, args.naive)
                w.result(c, status, out)
                counts["ok"] += 1
            except CaseError as e:
                w.result(c, e.status)
                counts["error"] += 1
            except Exception as e:              # the kernel broke: KVQ_E_SUBJECT, a FAIL [VER-RUN-02]
                w.comment("%s: %s: %s" % (c.id, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
                w.result(c, kvqio.KVQ_E_SUBJECT)
                counts["failed"] += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
    print("torch_kivi.py: %d cases (%d with outputs, %d error statuses, %d skipped, %d raised) on %s -> %s"
          % (len(vf), counts["ok"], counts["error"], counts["skipped"], counts["failed"],
             torch.cuda.get_device_name(device) if device.type == "cuda" else device, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
