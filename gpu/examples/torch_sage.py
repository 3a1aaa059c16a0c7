#!/usr/bin/env python3
"""torch_sage.py -- third-party attention kernels (PyTorch SDPA, SageAttention)
on the `sage-attn` cases of a kvq vector file, judged by kvq in results-file mode.

    build/rel/kvq gen --family sage --level standard -o sage.vec
    python3 gpu/examples/torch_sage.py --vectors sage.vec --kernel sdpa-bf16 -o bf16.results
    build/rel/kvq verify --vectors sage.vec --results bf16.results --ops sage-attn

A `sage-attn` case (spec/sage.md [SAGE-ATT-01]) is one head: Q `[nq][128]`,
K and V `[nk][128]` in binary32, the softmax scale `tau` (binary32), causal or
not.  Its output O is judged against exact attention
`O*_i = sum_j softmax_j(tau q_i . k_j) V_j` over the visible keys: every
element within the case's `bound` of the enclosure `[lo, hi]` [SAGE-ATT-07],
[VEC-SAGE-10].  The bound is derived for the SageAttention2 pipeline (INT8 or
INT4 Q and K, FP8 P and V), so it is loose enough for most kernels that compute
the same function with other roundings -- but it is that pipeline's guarantee,
not a tolerance chosen for them (gpu/examples/README.md says what a failure of
each kernel means).

The harness computes the op's function and nothing else:

- scale: `tau` as given (natural base: SDPA's `scale=tau`, SageAttention's
  `sm_scale=tau`; both fold log2(e) in themselves where they work in base 2);
- causal: query i sees key j when `j + nq <= i + nk` (the queries are the last
  nq positions: bottom-right alignment).  torch's `is_causal` and
  SageAttention's causal kernel are top-left (SageAttention requires
  nq == nk).  When nq < nk the harness prepends nk - nq zero query rows, runs
  the kernel causal on nk queries and keeps the last nq rows (query i + nk - nq
  of the padded problem sees exactly keys 0 .. i + nk - nq); `--causal-align
  mask` gives SDPA an explicit boolean mask instead.  When nq > nk the first
  nq - nk rows see no key: their output is +0 by the op's definition, written
  by the harness; the kernel runs on the last nk rows;
- statuses: the op's parameter checks in the op's order, before any kernel
  runs: `KVQ_E_PARAM` (nq, nk, dim, tau, causal, buffer, bits), then K (a NaN
  or an infinity `KVQ_E_NONFINITE`, else `|k| > 2^48` `KVQ_E_PARAM`), then Q
  (the same), then V (`KVQ_E_NONFINITE`).  An error case's result is
  `result id=... status=N`, no outputs.  (buffer and bits name the pinned
  pipeline's accumulator and Q/K code width; these kernels have neither, so
  they only take part in the checks.)

Kernels (--kernel): sdpa-f32, sdpa-f16, sdpa-bf16, sdpa-f64 (torch.nn.
functional.scaled_dot_product_attention, Q, K, V cast to that dtype, O cast
back to binary32; --backend pins flash, efficient, math or cudnn; binary64 is
the control that must pass), sageattn (SageAttention 1.0.6, `from
sageattention import sageattn`, Triton kernels: binary16 Q, K, V in, binary16 O
out) and sageattn-f32 (the same given binary32 Q, K, V).  --plant makes a
deliberate mistake (the scale 1/d, torch's top-left causal mask) that kvq must
reject.  A kernel that cannot run here (no CUDA
device, sageattention not importable) gives a results file that says
`unavailable`: kvq counts every case SKIPPED, never passed.  (With
TRITON_INTERPRET=1, sageattn runs on --device cpu through Triton's interpreter,
given a sageattention whose `assert q.is_cuda` is removed.)  A pinned backend
that has no kernel for a case (flash in binary32, say) gives that case
`skipped=`; a kernel that raises gives `KVQ_E_SUBJECT` (a FAIL) and a comment.

Adding an operation (a multi-head, grouped-query variant, or an input-format
field): one reader function that turns the case into an `Attn` (heads, shapes,
tau, causal, the inputs as `[heads][n][dim]` binary32, `in_fmt` when the case
names the format its inputs are representable in) and lays the output back out,
registered in OPS.  Nothing else changes: the kernels take `[1][H][N][D]`
tensors (GQA when H_q != H_kv).

The module imports torch only inside main(), so `--help` works without it.
"""

import argparse
import math
import os
import sys
from array import array

_HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (os.path.join(_HERE, "..", "..", "conformance", "python"),    # the source tree
           os.path.join(_HERE, "..", "python")):                        # $(PREFIX)/share/kvq
    if os.path.isfile(os.path.join(_p, "kvqio.py")) and _p not in sys.path:
        sys.path.append(_p)
import kvqio  # noqa: E402  (stdlib only)

KERNELS = ("sdpa-f32", "sdpa-f16", "sdpa-bf16", "sdpa-f64", "sageattn", "sageattn-f32")
_SDPA_DTYPES = {"sdpa-f32": "float32", "sdpa-f16": "float16", "sdpa-bf16": "bfloat16", "sdpa-f64": "float64"}
BACKENDS = ("auto", "flash", "efficient", "math", "cudnn")
_BACKEND_ENUM = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "math": "MATH", "cudnn": "CUDNN_ATTENTION"}
# deliberate mistakes (--plant), each of which kvq must reject
PLANTS = ("scale-1-over-d",    # softmax scale 1/d instead of the case's tau
          "causal-top-left")   # torch's is_causal on nq != nk: key j visible to query i when j <= i
KVQ_E_NONFINITE = 1                      # include/kvq.h, kvq_status [API-STATUS-01]
KVQ_E_PARAM = 3
TWO48 = 2.0 ** 48


class CaseError(Exception):
    """The case's status is an error: (status,)."""

    def __init__(self, status):
        Exception.__init__(self, status)
        self.status = status


class NoKernel(Exception):
    """The pinned backend has no kernel for this case: the case is skipped."""


class Attn:
    """One attention problem, as the kernels take it.

    hq, hkv: query and key/value heads (hq a multiple of hkv); nq, nk, dim;
    tau: the softmax scale (natural base); causal: bottom-right [SAGE-ATT-01];
    q: hq*nq*dim binary32 values, k and v hkv*nk*dim, head-major ([h][n][d]);
    in_fmt: None (binary32 values) or the format the case says the inputs are
    values of ([SAGE-MHA-02]); a kernel casts to its own dtype, exactly when
    that is in_fmt."""

    __slots__ = ("hq", "hkv", "nq", "nk", "dim", "tau", "causal", "q", "k", "v", "in_fmt")

    def __init__(self, **kw):
        self.in_fmt = None
        for key, val in kw.items():
            setattr(self, key, val)

    def first_visible_row(self):
        """The first query row that sees a key: rows before it have output +0."""
        return max(0, self.nq - self.nk) if self.causal else 0


def _check_finite_then_magnitude(x, limit):
    """[SAGE-SM-06] on one input: a NaN or an infinity first, then |x| > limit."""
    if not all(map(math.isfinite, x)):
        raise CaseError(KVQ_E_NONFINITE)
    if limit is not None and (max(x) > limit or -min(x) > limit):
        raise CaseError(KVQ_E_PARAM)


def read_sage_attn(case):
    """A `sage-attn` case -> Attn, or CaseError with the op's status, the checks
    in the order of [SAGE-ATT-01]: parameters, then K, Q (each whole: non-finite,
    then |x| > 2^48), then V (non-finite)."""
    v = case.values
    nq, nk, dim, tau = v["nq"], v["nk"], v["dim"], v["tau"]
    if not (1 <= nq <= 1 << 24 and 1 <= nk <= 1 << 24 and dim == 128
            and v["causal"] in (0, 1) and v["buffer"] in (64, 128, 0) and v["bits"] in (8, 4)
            and 2.0 ** -126 <= tau <= 2.0 ** 16):             # a NaN tau fails too
        raise CaseError(KVQ_E_PARAM)
    _check_finite_then_magnitude(v["k"], TWO48)                 # the smoothing of K
    _check_finite_then_magnitude(v["q"], TWO48)                 # the smoothing of Q
    _check_finite_then_magnitude(v["v"], None)                  # the V quantizer
    return Attn(hq=1, hkv=1, nq=nq, nk=nk, dim=dim, tau=tau, causal=bool(v["causal"]),
                q=v["q"], k=v["k"], v=v["v"])


def outputs_sage_attn(case, attn, o):
    """The result fields of a `sage-attn` case from O (hq*nq*dim binary32)."""
    return case.encode_outputs({"o": o})


def _in_format(x, fmt):
    """Whether the finite binary32 value x is a value of fmt [SAGE-MHA-02]:
    binary16 (11 significant bits, exponents -14..15, subnormals to 2^-24) or
    bfloat16 (8 significant bits, binary32's range, subnormals to 2^-133)."""
    if fmt == "binary32" or x == 0.0 or not math.isfinite(x):
        return True
    prec, emin, emax = (11, -14, 15) if fmt == "binary16" else (8, -126, 127)
    m, e = math.frexp(abs(x))                     # |x| = m 2^e, 1/2 <= m < 1
    if e - 1 > emax:
        return False
    quantum = max(e - 1, emin) - (prec - 1)       # the exponent of the format's ulp at |x|
    return math.ldexp(abs(x), -quantum) == math.floor(math.ldexp(abs(x), -quantum))


def read_sage_mha(case):
    """A `sage-mha` case -> Attn, or CaseError, in the order of [SAGE-MHA-04]:
    parameters (those of sage-attn, then hq, hkv), then a finite input that is
    not a value of in_fmt, then the heads h = 0 .. hq-1 in order, each with the
    checks of sage-attn on (Q_h, K_g, V_g), g = h / (hq / hkv)."""
    v = case.values
    nq, nk, dim, tau, hq, hkv = v["nq"], v["nk"], v["dim"], v["tau"], v["hq"], v["hkv"]
    if not (1 <= nq <= 1 << 24 and 1 <= nk <= 1 << 24 and dim == 128
            and v["causal"] in (0, 1) and v["buffer"] in (64, 128, 0) and v["bits"] in (8, 4)
            and 2.0 ** -126 <= tau <= 2.0 ** 16
            and 1 <= hkv <= hq <= 1024 and hq % hkv == 0):
        raise CaseError(KVQ_E_PARAM)
    fmt = v["in_fmt"]
    fmt = fmt if isinstance(fmt, str) else ("binary32", "binary16", "bfloat16")[fmt]
    for x in (v["q"], v["k"], v["v"]):
        if not all(_in_format(e, fmt) for e in x):
            raise CaseError(KVQ_E_PARAM)
    qn, kn = nq * dim, nk * dim
    for h in range(hq):
        g = h // (hq // hkv)
        _check_finite_then_magnitude(v["k"][g * kn:(g + 1) * kn], TWO48)
        _check_finite_then_magnitude(v["q"][h * qn:(h + 1) * qn], TWO48)
        _check_finite_then_magnitude(v["v"][g * kn:(g + 1) * kn], None)
    return Attn(hq=hq, hkv=hkv, nq=nq, nk=nk, dim=dim, tau=tau, causal=bool(v["causal"]),
                q=v["q"], k=v["k"], v=v["v"], in_fmt=fmt)


# operation -> (reader, output writer); a new operation is one more entry
OPS = {"sage-attn": (read_sage_attn, outputs_sage_attn),
       "sage-mha": (read_sage_mha, outputs_sage_attn)}


# ---- the kernels: (torch, q, k, v, causal, tau) -> O, tensors [1][H][N][D];
# causal here is top-left with nq == nk (the harness aligned it), or an explicit mask

def _sdpa_kernel(dtype_name, backend, align):
    def run(torch, q, k, v, causal, tau):
        F = torch.nn.functional
        dt = getattr(torch, dtype_name)
        kw = {"scale": tau}
        if q.shape[1] != k.shape[1]:
            kw["enable_gqa"] = True
        if causal is True:
            kw["is_causal"] = True
        elif causal is not False:                           # an explicit boolean mask
            kw["attn_mask"] = causal
        args = (q.to(dt), k.to(dt), v.to(dt))
        try:
            if backend == "auto":
                o = F.scaled_dot_product_attention(*args, **kw)
            else:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                with sdpa_kernel(getattr(SDPBackend, _BACKEND_ENUM[backend])):
                    o = F.scaled_dot_product_attention(*args, **kw)
        except RuntimeError as e:
            if "No available kernel" in str(e):
                raise NoKernel("sdpa-%s-has-no-kernel-for-this-case" % backend)
            raise
        return o.float()
    run.align = align
    return run


_SAGEATTN = None


def _sageattn_kernel(dtype_name):
    def run(torch, q, k, v, causal, tau):
        # sageattn smooths K in place (k -= mean(k)): the tensors here are the harness's own
        dt = getattr(torch, dtype_name)
        if q.shape[1] != k.shape[1]:                   # GQA: query head h reads KV head h / group
            group = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        o = _SAGEATTN(q.to(dt).contiguous(), k.to(dt).contiguous(), v.to(dt).contiguous(),
                      tensor_layout="HND", is_causal=causal is True, sm_scale=tau)
        return o.float()
    run.align = "pad"
    return run


class Plan:
    """How a problem reaches a kernel whose causal mask is top-left: the kernel
    runs on query rows r0 .. nq-1 after `pad` zero rows, causal (top-left) or
    with the boolean mask `j <= r + diag` (`diag` not None), or not causal."""

    __slots__ = ("r0", "pad", "causal", "diag")

    def __init__(self, r0, pad, causal, diag):
        self.r0, self.pad, self.causal, self.diag = r0, pad, causal, diag

    def kernel_sees(self, i, j):
        """Whether the kernel, so called, lets query i of the problem see key j."""
        if i < self.r0:
            return False                            # row written as +0 by the harness
        r = i - self.r0                             # its row among the rows passed
        if self.diag is not None:
            return j <= r + self.diag
        return not self.causal or j <= r + self.pad


def plan(a, align, plant=""):
    """The Plan of problem a for a kernel whose causal alignment is `align` ('pad'
    or 'mask'), matching [SAGE-ATT-01]: j visible to i when j + nq <= i + nk."""
    if not a.causal:
        return Plan(0, 0, False, None)
    if plant == "causal-top-left":                  # the mistake: torch's is_causal as it is
        return Plan(0, 0, True, None)
    r0 = a.first_visible_row()                      # nq > nk: rows before r0 see no key
    nq = a.nq - r0
    if nq == a.nk:
        return Plan(r0, 0, True, None)
    if align == "pad":                              # nq < nk: row r + nk - nq of nk rows
        return Plan(r0, a.nk - nq, True, None)
    return Plan(r0, 0, True, a.nk - nq)             # keys 0 .. r + nk - nq


def run_attn(torch, kernel, a, device, plant=""):
    """O (hq*nq*dim binary32, array('f')) of one problem by one kernel; plant: a
    deliberate mistake (PLANTS), to see kvq reject it."""
    tau = 1.0 / a.dim if plant == "scale-1-over-d" else a.tau
    p = plan(a, kernel.align, plant)

    def t(x, h, n):                                 # array('f') -> [1][h][n][dim], bit for bit
        return torch.frombuffer(bytearray(x.tobytes()), dtype=torch.float32).view(1, h, n, a.dim)
    q = t(a.q, a.hq, a.nq)[:, :, p.r0:, :]
    k = t(a.k, a.hkv, a.nk)
    v = t(a.v, a.hkv, a.nk)
    if p.pad:
        q = torch.cat([torch.zeros(1, a.hq, p.pad, a.dim), q], dim=2)
    causal = p.causal
    if p.diag is not None:
        causal = torch.ones(a.nq - p.r0, a.nk, dtype=torch.bool).tril(diagonal=p.diag).to(device)
    o = kernel(torch, q.to(device), k.to(device), v.to(device), causal, tau)
    o = o[:, :, p.pad:, :].cpu()
    if p.r0:
        o = torch.cat([torch.zeros(1, a.hq, p.r0, a.dim), o], dim=2)
    return array("f", o.contiguous().view(-1).tolist())


def _versions(torch):
    out = ["torch %s" % torch.__version__]
    try:
        import triton
        out.append("triton %s" % triton.__version__)
    except Exception:                                           # noqa: BLE001
        pass
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Run a third-party attention kernel (PyTorch SDPA or SageAttention) on the "
                    "sage-attn cases of a kvq vector file and write a kvq results file; judge it with "
                    "`kvq verify --vectors FILE --results RESULTS --ops sage-attn`.")
    ap.add_argument("--vectors", required=True, help="kvq vector file (kvq gen --family sage ...)")
    ap.add_argument("-o", "--out", required=True, help="results file to write")
    ap.add_argument("--kernel", choices=KERNELS, default="sdpa-f32",
                    help="sdpa-f32|sdpa-f16|sdpa-bf16|sdpa-f64: torch SDPA with Q, K, V in that dtype; "
                         "sageattn: SageAttention 1.0.6 (Triton) with binary16 Q, K, V, sageattn-f32 with "
                         "binary32 ones (default sdpa-f32)")
    ap.add_argument("--backend", choices=BACKENDS, default="auto",
                    help="SDPA backend to pin (torch.nn.attention.sdpa_kernel); default auto: torch chooses")
    ap.add_argument("--causal-align", choices=("pad", "mask"), default="pad",
                    help="causal with nq < nk (bottom-right): prepend nk - nq zero queries and run "
                         "top-left causal (pad, default), or give SDPA an explicit boolean mask (mask)")
    ap.add_argument("--device", default="cuda",
                    help="torch device (default cuda; 'cpu' for sdpa-*, and for sageattn under TRITON_INTERPRET=1)")
    ap.add_argument("--plant", choices=PLANTS, default="",
                    help="a deliberate mistake, to see kvq reject it: the scale 1/d instead of tau, or "
                         "torch's top-left causal mask where the op's is bottom-right")
    ap.add_argument("--no-digest", action="store_true",
                    help="do not check the vector file's end-line digest here (pure Python, about 8 s "
                         "for the standard SAGE set; kvq verify checks the same file)")
    ap.add_argument("--subject", default=None, help="subject name in the results file")
    args = ap.parse_args(argv)
    global _SAGEATTN
    me = "torch_sage.py"
    if args.kernel.startswith("sageattn") and (args.backend != "auto" or args.causal_align != "pad" or args.plant):
        ap.error("--backend, --causal-align mask and --plant are SDPA options; sageattn has one kernel and no mask")

    try:
        import torch
    except ImportError:
        print("%s: PyTorch is not installed here (import torch failed); this example needs it "
              "(and a CUDA device, or --device cpu for sdpa-*)" % me, file=sys.stderr)
        return 2
    subject = args.subject
    if subject is None and args.kernel.startswith("sageattn"):
        try:
            from importlib.metadata import version
            subject = "sageattention-%s-%s" % (version("sageattention"), args.kernel)
        except Exception:                                       # noqa: BLE001
            subject = "sageattention-" + args.kernel
    elif subject is None:
        subject = ("torch-" + args.kernel + ("" if args.backend == "auto" else "-" + args.backend)
                   + ("-mask" if args.causal_align == "mask" else "")
                   + ("-planted-" + args.plant if args.plant else ""))
    try:
        vf = kvqio.read_vectors(args.vectors, check_digest=not args.no_digest)
    except (OSError, ValueError) as e:
        print("%s: %s" % (me, e), file=sys.stderr)
        return 2

    # can the kernel run here?  If not: an 'unavailable' file, every case SKIPPED [VEC-RES-01]
    why = None
    try:
        device = torch.device(args.device)
    except RuntimeError as e:
        print("%s: --device %s: %s" % (me, args.device, str(e).splitlines()[0]), file=sys.stderr)
        return 2
    if device.type == "cuda" and not torch.cuda.is_available():
        why = "no CUDA device visible to PyTorch"
    elif args.kernel.startswith("sageattn"):
        if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
            why = "sageattn runs on CUDA devices only (or under TRITON_INTERPRET=1)"
        else:
            try:
                from sageattention import sageattn
                _SAGEATTN = sageattn
            except Exception as e:                              # noqa: BLE001
                why = "import sageattention: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    if why is not None:
        try:
            with kvqio.ResultsWriter(args.out, subject, unavailable=why):
                pass
        except OSError as e:
            print("%s: cannot write %s: %s" % (me, args.out, e.strerror or e), file=sys.stderr)
            return 2
        print("%s: %s; wrote an 'unavailable' results file" % (me, why), file=sys.stderr)
        return 0

    if args.kernel.startswith("sageattn"):
        kernel = _sageattn_kernel("float32" if args.kernel == "sageattn-f32" else "float16")
    else:
        kernel = _sdpa_kernel(_SDPA_DTYPES[args.kernel], args.backend, args.causal_align)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else str(device)
    counts = {"ok": 0, "error": 0, "skipped": 0, "failed": 0}
    try:
        w = kvqio.ResultsWriter(args.out, subject)
    except OSError as e:
        print("%s: cannot write %s: %s" % (me, args.out, e.strerror or e), file=sys.stderr)
        return 2
    with w:
        w.comment("%s --kernel %s --backend %s --causal-align %s%s on %s; %s"
                  % (me, args.kernel, args.backend, args.causal_align,
                     " --plant " + args.plant if args.plant else "", where, ", ".join(_versions(torch))))
        for c in vf:
            op = OPS.get(c.op)
            if op is None:
                w.skipped(c, "torch-sage-has-no-" + c.op)
                counts["skipped"] += 1
                continue
            read, outputs = op
            try:
                a = read(c)
                o = run_attn(torch, kernel, a, device, args.plant)
                w.result(c, 0, outputs(c, a, o))
                counts["ok"] += 1
            except CaseError as e:
                w.result(c, e.status)
                counts["error"] += 1
            except NoKernel as e:
                w.skipped(c, str(e))
                counts["skipped"] += 1
            except Exception as e:              # the kernel broke: KVQ_E_SUBJECT, a FAIL [VER-RUN-02]
                w.comment("%s: %s: %s" % (c.id, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
                w.result(c, kvqio.KVQ_E_SUBJECT)
                counts["failed"] += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
    print("%s: %s: %d cases (%d with outputs, %d error statuses, %d skipped, %d raised) on %s -> %s"
          % (me, subject, len(vf), counts["ok"], counts["error"], counts["skipped"], counts["failed"],
             where, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
