#!/usr/bin/env python3
"""attn_bench.py -- the SageAttention2 pipeline of gpu/sage/sage_attn.cu
(kvq_cuda_sage_attn, spec/sage.md "Attention" [SAGE-ATT-01..09]) side by side
with torch SDPA (each backend forced: FLASH_ATTENTION, CUDNN_ATTENTION,
EFFICIENT_ATTENTION) and SageAttention 1 (sageattention 1.0.6, Triton), on the
same inputs, on the device.

Shapes: 32 query heads, d = 128, nq = nk = N for N in --sizes (default
4096,8192,16384,32768), causal and not, for each batch in --batches (default 1)
and each count of KV heads in --kv-heads (default 32; 8: grouped-query
attention, query head h reading KV head h / 4, SDPA with enable_gqa, and K, V
repeated to the query heads where a backend refuses it -- said in the row);
then the sizes of --long (e.g. 65536,131072) non-causal at batch 1, 32 KV heads.
Softmax scale tau = RN32(1/sqrt(128)).
Inputs: Q, K, V random normal binary32 [B*32][N][128], [B*KV][N][128] (seeded
per N, batch and KV heads); the kvq pipeline takes them as they are: grouped,
through kvq_cuda_sage_attn_gqa when the library has it ([SAGE-DEV-17]: K's
smoothing and the K and V quantizers once a KV head, the same output bits as
the repeated call; the row's gqa note says "grouped entry"), else K and V
repeated to the query heads (the same attention work, its K and V stages 4x;
the note says "K, V repeated") -- buffer=128 with the library's default core; with --level0 also the FA3 core at level 0
(KVQ_SAGE_FA3_LEVEL=0), with --vt0 the pipeline without V~ (KVQ_SAGE_VT=0,
[SAGE-DEV-15]), with --prev the pipeline as it was before the stage kernels and level
4 (KVQ_SAGE_STAGES=0 and KVQ_SAGE_FA3_LEVEL=3, [SAGE-DEV-16], [SAGE-DEV-13]), unless --no-loop the warpgroup core
(KVQ_SAGE_CORE=loop), unless --no-buffer0 buffer=0 (these three in the first
group only); qk_bits=8.  The binary16 methods take them rounded to binary16,
as [B][heads][N][128].

Timing: CUDA events around the call on torch's current stream, after warm-up;
median of --reps repetitions (fewer when one call is slow: at most about
--row-budget seconds of timed calls per row, at least 3; the accuracy call is
the first warm-up).  Before each repetition a 256
MiB buffer is written (cold L2) and the stream is kept busy a further
~0.3 ms (torch.cuda._sleep) so that host launch latency is not timed.  Each
call is the whole method: kvq smoothing, dS, quantizers and attention;
SageAttention 1's K smoothing, quantization and attention; SDPA's kernel.
TFLOPS = 4 N^2 d heads B / time, halved for causal; floor = the fraction of
the tensor-op floor (the FLOPs at the device's dense FP8/INT8 tensor rate,
PEAK_FP8, over the row's time).  Each kvq row of batch 1, 32 KV heads also
carries the stage split of one more call (kvq_cuda_sage_attn_stages: events
between smoothing K, smoothing Q, dS, the Q+K quantizers, V and the core, cold
L2), printed under the row and in the report.  speedup_vs_sdpa =
time of the fastest SDPA backend at that (N, causal) / the row's time.

Accuracy [SAGE-MET-01..02] (spec/sage.md "Accuracy metrics"): CosSim, L1,
RMSE of each method's output against a binary64 reference attention of the
binary32 inputs (softmax(tau Q K^T) V in torch float64, causal mask applied),
on random query rows of every head (--samples a head at 32 heads, as many
in all at more heads, at least 8 a head), flattened together;
evaluated in binary64 on the device; the degenerate cases as the spec defines
them; an output with a NaN or an infinity among the sampled rows gets no
metrics (the spec's KVQ_E_NONFINITE) and its count of non-finite values.

Isolation: each group (batch, KV heads) runs in a child process (this script
with --child), which rewrites its rows file after every row, per N the
baselines first and the kvq rows last, so that a device fault or a hang in one
method loses only that group's remaining rows (they are reported as failed
with the reason).  Past --deadline the remaining rows read SKIPPED.

Usage: attn_bench.py [--lib PATH] [--sizes 4096,...] [--batches 1,4] [--kv-heads 32,8]
                     [--long 65536,131072] [--reps 20] [--commit C] [--out DIR] [--quick]
                     [--samples 128] [--row-budget S] [--deadline S] [--level0] [--vt0] [--prev]
                     [--no-buffer0] [--no-loop] [--no-stages] [--no-isolate]
Writes DIR/sage-attn-bench.json and DIR/sage-attn-bench.txt (DIR: --out, else
$OUT, else .).  Exit status: 0 report written and every kvq row measured;
1 report written, some kvq row failed / skipped; 2 no report.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HEADS, D = 32, 128                             # query heads, head dimension
TAU = float.fromhex("0x1.6a09e6p-4")        # RN32(1/sqrt(128)), as kvq is given it
SEED = 20260601
FLUSH_BYTES = 256 << 20
SLEEP_CYCLES = 600000                          # ~0.3 ms at H100/H200 clocks

# the rows of one (N, causal), in the order they run within a child (kvq last)
SDPA_METHODS = [("sdpa-flash", "FLASH_ATTENTION"), ("sdpa-cudnn", "CUDNN_ATTENTION"),
                ("sdpa-efficient", "EFFICIENT_ATTENTION")]
# (method, buffer, KVQ_SAGE_CORE): None = the library's default core (the FlashAttention-3
# structured one [SAGE-DEV-12] when built), "loop" = the warpgroup core [SAGE-ATT-10]
KVQ_METHODS = [("kvq-b128", 128, None), ("kvq-b128-L0", 128, "L0"), ("kvq-b128-vt0", 128, "vt0"),
               ("kvq-b128-prev", 128, "prev"),
               ("kvq-b128-loop", 128, "loop"), ("kvq-b0", 0, None)]
LABELS = {"kvq-b128": "kvq SageAttn2 (INT8 QK, FP8 PV, buffer 128)",
          "kvq-b128-loop": "kvq SageAttn2, warpgroup core (KVQ_SAGE_CORE=loop, buffer 128)",
          "kvq-b128-L0": "kvq SageAttn2, FA3 core level 0 (KVQ_SAGE_FA3_LEVEL=0, buffer 128)",
          "kvq-b128-vt0": "kvq SageAttn2, V~ not written: the core transposes V (KVQ_SAGE_VT=0, buffer 128)",
          "kvq-b128-prev": "kvq SageAttn2, the stage kernels of before and FA3 level 3 (KVQ_SAGE_STAGES=0, "
                           "KVQ_SAGE_FA3_LEVEL=3, buffer 128)",
          "kvq-b0": "kvq SageAttn2 (INT8 QK, FP8 PV, buffer 0)",
          "sdpa-flash": "torch SDPA FLASH_ATTENTION (fp16)",
          "sdpa-cudnn": "torch SDPA CUDNN_ATTENTION (fp16)",
          "sdpa-efficient": "torch SDPA EFFICIENT_ATTENTION (fp16)",
          "sage1": "SageAttention 1.0.6 sageattn (fp16, Triton)"}

# the FA3 core's level of the default rows: the environment's KVQ_SAGE_FA3_LEVEL when this
# script starts (unset: the library's default), restored after a row that sets its own
BASE_LEVEL = os.environ.get("KVQ_SAGE_FA3_LEVEL")


def set_level(level):
    if level is None:
        os.environ.pop("KVQ_SAGE_FA3_LEVEL", None)
    else:
        os.environ["KVQ_SAGE_FA3_LEVEL"] = level


# kvq_cuda_sage_attn_stages: one pipeline call split at its stage boundaries (ms)
STAGES = ["smooth_k", "smooth_q", "ds", "quant_qk", "quant_v", "core"]

STATUS_NAMES = ["KVQ_OK", "KVQ_E_NONFINITE", "KVQ_E_SHAPE", "KVQ_E_PARAM", "KVQ_E_RANGE",
                "KVQ_E_NOMEM", "KVQ_E_IO", "KVQ_E_FORMAT", "KVQ_E_NODEVICE", "KVQ_E_DEVICE",
                "KVQ_E_SUBJECT"]                 # include/kvq.h, kvq_status


def status_name(st):
    return STATUS_NAMES[st] if 0 <= st < len(STATUS_NAMES) else f"status {st}"


def methods_of(args, first=True):
    """Method ids in run order: SDPA backends, SageAttention 1, then kvq.  The
    comparison rows of kvq (the warpgroup core, FA3 level 0, buffer 0) only in
    the first group (batch 1, 32 KV heads, N = --sizes)."""
    m = [name for name, _ in SDPA_METHODS] + ["sage1", "kvq-b128"]
    if args.level0 and first:
        m.append("kvq-b128-L0")
    if args.vt0 and first:
        m.append("kvq-b128-vt0")
    if args.prev and first:
        m.append("kvq-b128-prev")
    if not args.no_loop and first:
        m.append("kvq-b128-loop")
    if not args.no_buffer0 and first:
        m.append("kvq-b0")
    return m


def flops(n, causal, batch=1, heads=HEADS):
    f = 4.0 * n * n * D * heads * batch
    return f / 2 if causal else f


# The tensor-op floor: the device's dense FP8/INT8 tensor rate (NVIDIA's data sheets, without
# sparsity): H100 SXM and H200 1979 TFLOP/s.  A row's fraction of the floor is the time of
# its attention FLOPs at that rate over its measured time (= TFLOPS / rate); the binary16
# methods' own floor is half that rate.  Other devices: no fraction.
PEAK_FP8 = [("H200", 1979e12), ("H100 80GB HBM3", 1979e12), ("H100 SXM", 1979e12)]


def peak_fp8(device):
    for key, rate in PEAK_FP8:
        if key in (device or ""):
            return rate
    return None


# ---------------------------------------------------------------- the kvq library

class SageAttn(ctypes.Structure):       # kvq_sage_attn (include/kvq_sage_attn.h)
    _fields_ = [("nq", ctypes.c_uint32), ("nk", ctypes.c_uint32), ("dim", ctypes.c_uint32),
                ("tau", ctypes.c_float), ("causal", ctypes.c_uint32),
                ("buffer", ctypes.c_uint32), ("qk_bits", ctypes.c_uint32)]


def default_lib():
    for p in ("build/gpu/libkvq_sage_attn.so", ".devcarry/sage/libkvq_sage_attn.so"):
        if os.path.exists(p):
            return p
    return "build/gpu/libkvq_sage_attn.so"


def load_lib(path):
    """(lib, None) with the pipeline's entry points typed, or (None, why)."""
    if not os.path.exists(path):
        return None, f"library {path} not found"
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
        lib.kvq_cuda_sage_attn_workspace.restype = ctypes.c_size_t
        lib.kvq_cuda_sage_attn_workspace.argtypes = [ctypes.POINTER(SageAttn), ctypes.c_uint32]
        lib.kvq_cuda_sage_attn.restype = ctypes.c_int
        lib.kvq_cuda_sage_attn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(SageAttn),
                                           ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_void_p]
    except (OSError, AttributeError) as e:
        return None, f"library {path}: {e}"
    try:                                   # the stage split (a library without it: no split)
        lib.kvq_cuda_sage_attn_stages.restype = ctypes.c_int
        lib.kvq_cuda_sage_attn_stages.argtypes = [ctypes.POINTER(ctypes.c_float)] + \
            lib.kvq_cuda_sage_attn.argtypes
    except AttributeError:
        pass
    try:                                   # grouped KV heads [SAGE-DEV-17] (a library without it: repeated)
        lib.kvq_cuda_sage_attn_gqa_workspace.restype = ctypes.c_size_t
        lib.kvq_cuda_sage_attn_gqa_workspace.argtypes = [ctypes.POINTER(SageAttn), ctypes.c_uint32,
                                                         ctypes.c_uint32]
        lib.kvq_cuda_sage_attn_gqa.restype = ctypes.c_int
        lib.kvq_cuda_sage_attn_gqa.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                               ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(SageAttn),
                                               ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p,
                                               ctypes.c_size_t, ctypes.c_void_p]
        lib.kvq_cuda_sage_attn_gqa_stages.restype = ctypes.c_int
        lib.kvq_cuda_sage_attn_gqa_stages.argtypes = [ctypes.POINTER(ctypes.c_float)] + \
            lib.kvq_cuda_sage_attn_gqa.argtypes
        lib.kvq_gqa = True
    except AttributeError:
        lib.kvq_gqa = False
    return lib, None


def stages_text(st):
    """One line of a row's stage split, or ''."""
    if not st:
        return ""
    return " ".join(f"{k} {st[k]:.3f}" for k in STAGES)


# ---------------------------------------------------------------- child: one N

def run_child(args):
    import torch
    import torch.nn.functional as F

    bsz, hkv = args.child_batch, args.child_kvh
    hq = HEADS
    nh, nkh = bsz * hq, bsz * hkv                  # query heads, KV heads over the batch
    grp = hq // hkv
    sizes = [int(x) for x in args.child.split(",")]
    causals = [int(x) for x in args.child_causal.split(",")]
    methods = methods_of(args, args.child_first)
    deadline = args.deadline_at
    dev = torch.cuda.get_device_name(0)
    meta = {"device": dev, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}
    try:
        import triton
        meta["triton"] = triton.__version__
    except Exception as e:                                        # noqa: BLE001
        meta["triton"] = f"unavailable: {e}"
    try:
        from importlib.metadata import version
        meta["sageattention"] = version("sageattention")
    except Exception as e:                                        # noqa: BLE001
        meta["sageattention"] = f"unavailable: {e}"
    rows = []

    def save():
        tmp = args.frag + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f)
        os.replace(tmp, args.frag)

    def add(row):
        rows.append(row)
        save()
        msg = (f"B={bsz} KV={hkv:2d} N={row['N']:6d} causal={row['causal']} {row['method']:15s} ")
        if row["state"] == "ok":
            m = row.get("metrics") or {}
            msg += (f"{row['ms']:9.3f} ms {row['tflops']:7.1f} TFLOPS  reps {row['reps']}  "
                    f"cos {fmt(m.get('cossim'), '.7f')} l1 {fmt(m.get('l1'), '.3e')} "
                    f"rmse {fmt(m.get('rmse'), '.3e')}")
            if row.get("stages_ms"):
                msg += "\n    stages (ms): " + stages_text(row["stages_ms"])
        else:
            msg += f"{row['state']}: {row['reason']}"
        print(msg, flush=True)

    save()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        from sageattention import sageattn
        sage_why = None
    except Exception as e:                                        # noqa: BLE001
        sageattn, sage_why = None, f"import sageattention: {type(e).__name__}: {e}"
    lib, lib_why = load_lib(args.lib)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    budget = args.row_budget

    for n in sizes:
        torch.manual_seed(SEED)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(SEED + n + 1000003 * (bsz - 1) + 7919 * hkv)
        q = torch.randn(nh, n, D, generator=gen, device="cuda", dtype=torch.float32)
        k = torch.randn(nkh, n, D, generator=gen, device="cuda", dtype=torch.float32)
        v = torch.randn(nkh, n, D, generator=gen, device="cuda", dtype=torch.float32)
        # the sampled query rows: about --samples x 32 rows over all heads, the same
        # count a head (at least 8), distinct and sorted within a head
        cg = torch.Generator()
        cg.manual_seed(SEED + 7 * n)
        s = min(n, max(8, args.samples * HEADS // nh))
        rows_idx = torch.stack([torch.randperm(n, generator=cg)[:s].sort().values
                                for _ in range(nh)]).cuda()               # [nh][s]
        hidx = torch.arange(nh, device="cuda")[:, None]
        refs = reference(torch, q, k, v, rows_idx, grp, causals)          # {causal: [nh][s][D] f64}
        q16 = q.half().view(bsz, hq, n, D)
        k16 = k.half().view(bsz, hkv, n, D)
        v16 = v.half().view(bsz, hkv, n, D)

        def pick(out):
            """The sampled rows of an output [nh][n][D] (or [B][hq][n][D]) in float64."""
            return out.reshape(nh, n, D)[hidx, rows_idx].double()

        def late():
            return time.time() > deadline

        def base_row(method, causal):
            return {"method": method, "label": LABELS[method], "N": n, "causal": causal,
                    "batch": bsz, "heads": hq, "kv_heads": hkv}

        def measure(row, fn, causal, after_first=None):
            """Accuracy call, warm-up, timing; fills row (state ok) or raises."""
            t0 = time.time()
            out = fn()
            torch.cuda.synchronize()
            first_s = time.time() - t0
            if after_first is not None:
                after_first()
            row["metrics"] = metrics(torch, refs[causal], pick(out))
            del out
            ms, ms_min, reps = time_fn(torch, fn, flush, args.reps, budget, first_s)
            row.update(state="ok", ms=ms, ms_min=ms_min, reps=reps,
                       tflops=flops(n, causal, bsz, hq) / (ms * 1e-3) / 1e12)

        def guarded(method, causal, body):
            row = base_row(method, causal)
            if late():
                row.update(state="skipped", reason="time budget (--deadline) spent")
                add(row)
                return
            try:
                body(row)
            except Exception as e:                                # noqa: BLE001
                msg = str(e).strip()
                row.update(state=row.get("fail_state", "unavailable"),
                           reason=f"{type(e).__name__}: {msg.splitlines()[0][:300] if msg else ''}")
                row.pop("fail_state", None)
                row.pop("metrics", None)
                try:
                    torch.cuda.synchronize()
                except Exception:                                 # noqa: BLE001
                    pass
            row.pop("fail_state", None)
            add(row)
            try:
                torch.cuda.empty_cache()
            except Exception:                                     # noqa: BLE001
                pass

        # K and V repeated to the query heads (outside the timing), for a method that
        # takes no grouped KV heads: made once, when first needed
        rep16 = {}

        def repeated16():
            if not rep16:
                rep16["k"] = k16.repeat_interleave(grp, dim=1).contiguous()
                rep16["v"] = v16.repeat_interleave(grp, dim=1).contiguous()
            return rep16["k"], rep16["v"]

        # ---- baselines: SDPA backends (grouped KV heads: enable_gqa), SageAttention 1
        for causal in causals:
            for method, bname in SDPA_METHODS:
                def body(row, bname=bname, causal=causal):
                    backend = getattr(SDPBackend, bname)
                    with sdpa_kernel(backend):
                        if grp == 1:
                            measure(row, lambda: F.scaled_dot_product_attention(
                                q16, k16, v16, is_causal=bool(causal), scale=TAU), causal)
                            return
                        try:
                            row["gqa"] = "enable_gqa"
                            measure(row, lambda: F.scaled_dot_product_attention(
                                q16, k16, v16, is_causal=bool(causal), scale=TAU, enable_gqa=True), causal)
                        except Exception as e:                    # noqa: BLE001
                            # the backend takes no grouped heads: K and V repeated
                            row["gqa"] = f"K, V repeated (enable_gqa: {type(e).__name__})"
                            torch.cuda.synchronize()
                            kr, vr = repeated16()
                            measure(row, lambda: F.scaled_dot_product_attention(
                                q16, kr, vr, is_causal=bool(causal), scale=TAU), causal)
                guarded(method, causal, body)
        for causal in causals:
            def body(row, causal=causal):
                if sageattn is None:
                    raise RuntimeError(sage_why)
                # sageattn smooths K in place (k -= mean): give it its own copy
                if grp == 1:
                    ks = k16.clone()
                    fn = lambda: sageattn(q16, ks, v16, tensor_layout="HND", is_causal=bool(causal),
                                          sm_scale=TAU)
                    measure(row, fn, causal)
                    return
                try:
                    row["gqa"] = "grouped KV heads"
                    ks = k16.clone()
                    fn = lambda: sageattn(q16, ks, v16, tensor_layout="HND", is_causal=bool(causal),
                                          sm_scale=TAU)
                    measure(row, fn, causal)
                except Exception as e:                            # noqa: BLE001
                    row["gqa"] = f"K, V repeated ({type(e).__name__})"
                    torch.cuda.synchronize()
                    kr, vr = repeated16()
                    ks = kr.clone()
                    fn = lambda: sageattn(q16, ks, vr, tensor_layout="HND", is_causal=bool(causal),
                                          sm_scale=TAU)
                    measure(row, fn, causal)
            guarded("sage1", causal, body)
        q16 = k16 = v16 = None                # freed before the kvq rows
        rep16.clear()
        try:
            torch.cuda.empty_cache()
        except Exception:                                         # noqa: BLE001
            pass

        # ---- kvq: the whole pipeline from binary32 Q, K, V; grouped KV heads through the
        # grouped entry [SAGE-DEV-17] when the library has it, else K and V repeated to the
        # query heads (a library of before takes one KV head a query head)
        kgqa = grp > 1 and lib is not None and getattr(lib, "kvq_gqa", False)
        if grp > 1 and not kgqa:
            k = k.repeat_interleave(grp, dim=0).contiguous()
            v = v.repeat_interleave(grp, dim=0).contiguous()
        o = torch.empty(nh, n, D, dtype=torch.float32, device="cuda")
        res = torch.zeros(2, dtype=torch.int32, device="cuda")   # kvq_cuda_result {status, flags}
        for causal in causals:
            for method, buf, core in KVQ_METHODS:
                if method not in methods:
                    continue

                def body(row, buf=buf, causal=causal, core=core):
                    row["fail_state"] = "failed"
                    row["params"] = {"buffer": buf, "qk_bits": 8, "tau": TAU, "core": core or "default"}
                    if grp > 1:
                        row["gqa"] = "grouped entry (kvq_cuda_sage_attn_gqa)" if kgqa else "K, V repeated"
                    os.environ.pop("KVQ_SAGE_CORE", None)
                    os.environ.pop("KVQ_SAGE_VT", None)
                    os.environ.pop("KVQ_SAGE_STAGES", None)
                    set_level(BASE_LEVEL)
                    if core == "loop":
                        os.environ["KVQ_SAGE_CORE"] = core            # read by the library at each call
                    elif core == "L0":
                        set_level("0")
                    elif core == "vt0":
                        os.environ["KVQ_SAGE_VT"] = "0"               # [SAGE-DEV-15]: the core transposes V
                    elif core == "prev":
                        os.environ["KVQ_SAGE_STAGES"] = "0"           # [SAGE-DEV-16]: the stage kernels of before
                        set_level("3")                                # [SAGE-DEV-13]: level 3
                    row["params"]["fa3_level"] = os.environ.get("KVQ_SAGE_FA3_LEVEL", "default")
                    if lib is not None and hasattr(lib, "kvq_cuda_sage_attn_fa3_built"):
                        row["fa3_built"] = int(lib.kvq_cuda_sage_attn_fa3_built())
                    if lib is None:
                        raise RuntimeError(lib_why)
                    a = SageAttn(nq=n, nk=n, dim=D, tau=TAU, causal=causal, buffer=buf, qk_bits=8)
                    wsz = int(lib.kvq_cuda_sage_attn_gqa_workspace(ctypes.byref(a), nh, nkh) if kgqa
                              else lib.kvq_cuda_sage_attn_workspace(ctypes.byref(a), nh))
                    row["workspace_bytes"] = wsz
                    ws = torch.empty(max(wsz, 1), dtype=torch.uint8, device="cuda")
                    wsp = ws.data_ptr() if wsz else None

                    def call():
                        sp = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
                        if kgqa:
                            st = lib.kvq_cuda_sage_attn_gqa(o.data_ptr(), res.data_ptr(), q.data_ptr(),
                                                            k.data_ptr(), v.data_ptr(), ctypes.byref(a), nh, nkh,
                                                            wsp, wsz, sp)
                        else:
                            st = lib.kvq_cuda_sage_attn(o.data_ptr(), res.data_ptr(), q.data_ptr(), k.data_ptr(),
                                                        v.data_ptr(), ctypes.byref(a), nh, wsp, wsz, sp)
                        if st != 0:
                            row["kvq_status"] = status_name(st)
                            raise RuntimeError(f"kvq_cuda_sage_attn returned {status_name(st)} ({st})")
                        return o

                    def check_result(when):
                        torch.cuda.synchronize()
                        st, fl = (int(x) & 0xffffffff for x in res.tolist())
                        row["kvq_result"] = {"status": status_name(st), "flags": f"0x{fl:02x}"}
                        if st != 0:
                            raise RuntimeError(f"d_result status {status_name(st)} ({st}) {when}")
                    res.zero_()
                    o.fill_(float("nan"))       # an output left unwritten shows as non-finite
                    measure(row, call, causal, lambda: check_result("on the first call"))
                    check_result("after the timed calls")
                    # where one call's time goes: events between the stages, cold L2
                    if hasattr(lib, "kvq_cuda_sage_attn_stages") and not args.no_stages and \
                            args.child_first:
                        ms6 = (ctypes.c_float * 6)()
                        flush.zero_()
                        torch.cuda.synchronize()
                        sp = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
                        if kgqa:
                            st = lib.kvq_cuda_sage_attn_gqa_stages(ms6, o.data_ptr(), res.data_ptr(), q.data_ptr(),
                                                                   k.data_ptr(), v.data_ptr(), ctypes.byref(a), nh,
                                                                   nkh, wsp, wsz, sp)
                        else:
                            st = lib.kvq_cuda_sage_attn_stages(ms6, o.data_ptr(), res.data_ptr(), q.data_ptr(),
                                                               k.data_ptr(), v.data_ptr(), ctypes.byref(a), nh, wsp,
                                                               wsz, sp)
                        if st == 0:
                            row["stages_ms"] = {name: float(ms6[i]) for i, name in enumerate(STAGES)}
                        else:
                            row["stages_ms_error"] = status_name(st)
                        check_result("after the stage split")
                    del ws
                guarded(method, causal, body)
                os.environ.pop("KVQ_SAGE_CORE", None)
                os.environ.pop("KVQ_SAGE_VT", None)
                set_level(BASE_LEVEL)
        q = k = v = o = refs = None
        try:
            torch.cuda.empty_cache()
        except Exception:                                         # noqa: BLE001
            pass
    return 0


def reference(torch, q, k, v, rows_idx, grp, causals):
    """binary64 softmax(tau Q K^T) V of the sampled rows, the maskings asked
    for: query i sees keys j <= i under causal (nq = nk); query head h reads
    KV head h / grp."""
    h_, s = rows_idx.shape
    n = q.shape[1]
    out = {c: torch.empty(h_, s, D, dtype=torch.float64, device="cuda") for c in causals}
    cols = torch.arange(n, device="cuda")
    for h in range(h_):
        r = rows_idx[h]
        kh = k[h // grp].double()
        vh = v[h // grp].double()
        sc = (q[h, r].double() @ kh.T) * TAU                      # [s][n]
        if 0 in out:
            out[0][h] = torch.softmax(sc, dim=1) @ vh
        if 1 in out:
            sc.masked_fill_(cols[None, :] > r[:, None], float("-inf"))
            out[1][h] = torch.softmax(sc, dim=1) @ vh
        del kh, vh, sc
    torch.cuda.synchronize()
    return out


def metrics(torch, o, o2):
    """[SAGE-MET-01..02] in binary64 over the flattened sampled rows: O the
    reference, O' the method's output.  None values when O' is not finite."""
    o = o.flatten()
    o2 = o2.flatten()
    n = o.numel()
    bad = int((~torch.isfinite(o2)).sum())
    if bad:
        return {"cossim": None, "l1": None, "rmse": None, "max_abs": None, "nonfinite": bad, "n": n}
    sxy = float((o * o2).sum())
    sxx = float((o * o).sum())
    syy = float((o2 * o2).sum())
    so = float(o.abs().sum())
    d = o - o2
    sd = float(d.abs().sum())
    se = float((d * d).sum())
    if sxx == 0.0 and syy == 0.0:
        cos = 1.0
    elif sxx == 0.0 or syy == 0.0:
        cos = 0.0
    else:
        cos = sxy / (math.sqrt(sxx) * math.sqrt(syy))
    if so == 0.0:
        l1 = 0.0 if sd == 0.0 else math.inf
    else:
        l1 = sd / so
    rmse = math.sqrt(se / n)
    return {"cossim": cos, "l1": l1, "rmse": rmse, "max_abs": float(d.abs().max()), "nonfinite": 0, "n": n}


def time_fn(torch, fn, flush, reps, budget_s, first_s):
    """Median and minimum device time (ms) of fn over the repetitions, after
    warm-up; the repetitions are cut to about budget_s seconds of calls."""
    # the first (accuracy) call warmed up; short calls get more warm-up, long ones
    # none, their first call's time standing for one call's
    warm = 3 if first_s < 0.05 else (1 if first_s < 0.5 else 0)
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    if first_s < 0.5:
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        one = a.elapsed_time(b) / 1000.0
    else:
        one = first_s
    reps = max(3, min(reps, int(budget_s / max(one, 1e-6))))
    sleep = getattr(torch.cuda, "_sleep", None)
    ev = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        flush.zero_()
        if sleep is not None:
            sleep(SLEEP_CYCLES)
        a.record()
        fn()
        b.record()
        ev.append((a, b))
    torch.cuda.synchronize()
    ts = [x.elapsed_time(y) for x, y in ev]
    return statistics.median(ts), min(ts), reps


# ---------------------------------------------------------------- parent

def fmt(x, spec):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if math.isinf(x):
        return "inf"
    return format(x, spec)


def clean(x):
    """JSON without NaN/Infinity literals: inf -> "inf", nan -> null."""
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [clean(v) for v in x]
    return x


def run_group(args, g):
    """Rows and meta of one group (batch, KV heads, sizes, maskings), from a child
    process (or in process)."""
    bsz, hkv, sizes, causals = g["batch"], g["kv_heads"], g["sizes"], g["causals"]
    methods = methods_of(args, g["first"])
    fd, frag = tempfile.mkstemp(prefix=f"attn-bench-{bsz}-{hkv}-", suffix=".json")
    os.close(fd)
    left = args.deadline_at - time.time()
    why = None
    child = argparse.Namespace(**vars(args))
    child.child, child.frag = ",".join(str(n) for n in sizes), frag
    child.child_batch, child.child_kvh = bsz, hkv
    child.child_causal = ",".join(str(c) for c in causals)
    child.child_first = g["first"]
    if left < 15:
        why = "time budget (--deadline) spent before this group"
    elif args.no_isolate:
        try:
            run_child(child)
        except Exception as e:                                    # noqa: BLE001
            why = f"{type(e).__name__}: {e}"
        import torch
        torch.cuda.empty_cache()
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", child.child, "--frag", frag,
               "--child-batch", str(bsz), "--child-kvh", str(hkv), "--child-causal", child.child_causal,
               "--child-first", str(int(g["first"])),
               "--lib", args.lib, "--reps", str(args.reps), "--samples", str(args.samples),
               "--row-budget", str(args.row_budget), "--deadline-at", str(args.deadline_at - 8)]
        for flag in ("no_buffer0", "no_loop", "level0", "vt0", "prev", "no_stages"):
            if getattr(args, flag):
                cmd.append("--" + flag.replace("_", "-"))
        try:
            p = subprocess.run(cmd, timeout=left)
            if p.returncode != 0:
                why = f"child process for B={bsz} KV={hkv} exited with status {p.returncode}"
        except subprocess.TimeoutExpired:
            why = f"child process for B={bsz} KV={hkv} killed at the deadline (hung or too slow)"
    meta, rows = {}, []
    try:
        with open(frag) as f:
            d = json.load(f)
        meta, rows = d.get("meta", {}), d.get("rows", [])
    except (OSError, ValueError):
        pass
    for ext in ("", ".tmp"):
        try:
            os.unlink(frag + ext)
        except OSError:
            pass
    have = {(r["method"], r["N"], r["causal"]) for r in rows}
    for n in sizes:
        for causal in causals:
            for m in methods:
                if (m, n, causal) not in have:
                    rows.append({"method": m, "label": LABELS[m], "N": n, "causal": causal,
                                 "batch": bsz, "heads": HEADS, "kv_heads": hkv,
                                 "state": "failed" if m.startswith("kvq") else "unavailable",
                                 "reason": why or "no row written"})
                    print(f"B={bsz} KV={hkv:2d} N={n:6d} causal={causal} {m:15s} {rows[-1]['state']}: "
                          f"{rows[-1]['reason']}", flush=True)
    return meta, rows


def key_of(r):
    return (r.get("batch", 1), r.get("kv_heads", HEADS), r["N"], r["causal"])


def sort_key(r):
    """batch, then 32 KV heads before 8, N, causal, method"""
    return (r.get("batch", 1), -r.get("kv_heads", HEADS), r["N"], r["causal"], methods_order(r["method"]))


def annotate(rows, device):
    """Speed ratios: to the fastest SDPA backend of the same (batch, KV heads, N,
    causal); kvq rows also to SageAttention 1; every row its fraction of the
    tensor-op floor."""
    peak = peak_fp8(device)
    for r in rows:
        same = [x for x in rows if key_of(x) == key_of(r) and x["state"] == "ok"]
        sdpa = [x for x in same if x["method"].startswith("sdpa-")]
        if r["state"] != "ok":
            continue
        if peak:
            r["floor_fraction"] = r["tflops"] * 1e12 / peak
        if sdpa:
            best = min(sdpa, key=lambda x: x["ms"])
            r["best_sdpa"] = best["method"]
            r["speedup_vs_sdpa"] = best["ms"] / r["ms"]
        sage = [x for x in same if x["method"] == "sage1"]
        if r["method"].startswith("kvq") and sage:
            r["speedup_vs_sage1"] = sage[0]["ms"] / r["ms"]
        for other, k in (("kvq-b128-loop", "speedup_vs_loop"), ("kvq-b128-L0", "speedup_vs_L0"),
                         ("kvq-b128-vt0", "speedup_vs_vt0"), ("kvq-b128-prev", "speedup_vs_prev")):
            x = [y for y in same if y["method"] == other]
            if r["method"] == "kvq-b128" and x:
                r[k] = x[0]["ms"] / r["ms"]


def shape_text(r):
    return f"B={r.get('batch', 1)} {r.get('heads', HEADS)}/{r.get('kv_heads', HEADS)}"


def goals(rows):
    """The two goals judged on the kvq (buffer 128) rows: >= 1.5x the fastest
    SDPA backend at N >= 8192, > 1x SageAttention 1 on every row."""
    kv = sorted([r for r in rows if r["method"] == "kvq-b128"], key=sort_key)
    out = {}
    for key, name, target, strict, nmin in (
            ("speedup_vs_sdpa", "kvq vs the fastest SDPA backend, N >= 8192", 1.5, False, 8192),
            ("speedup_vs_sage1", "kvq vs SageAttention 1", 1.0, True, 0)):
        sel = [r for r in kv if r["N"] >= nmin]
        meas = [r for r in sel if key in r]
        unmeas = [r for r in sel if key not in r]
        ok = [r for r in meas if (r[key] > target if strict else r[key] >= target)]
        g = {"goal": f"{'>' if strict else '>='} {target}x", "measured": len(meas), "pairs": len(sel),
             "met_pairs": len(ok),
             "met": bool(sel) and not unmeas and len(ok) == len(meas),
             "values": [{"N": r["N"], "causal": r["causal"], "batch": r.get("batch", 1),
                         "kv_heads": r.get("kv_heads", HEADS), "ratio": r[key]} for r in meas],
             "unmeasured": [{"N": r["N"], "causal": r["causal"], "batch": r.get("batch", 1),
                             "kv_heads": r.get("kv_heads", HEADS),
                             "why": r.get("reason") or "no baseline row measured"} for r in unmeas]}
        g["name"] = name
        out[key] = g
    return out


def summary(doc):
    rows, name = doc["rows"], "sage-attn-bench.txt"
    out = [f"# gpu/reports/{name} -- SageAttention2 (kvq_cuda_sage_attn) vs torch SDPA and SageAttention 1",
           f"# device: {doc['device']}; torch {doc['torch']} (CUDA {doc.get('cuda')}, cuDNN {doc.get('cudnn')}); "
           f"triton {doc.get('triton')}; sageattention {doc.get('sageattention')}; commit {doc['commit']}",
           f"# library: {doc['lib']}; gpu/sage/attn_bench.py; the FA3 core's level (KVQ_SAGE_FA3_LEVEL) of the "
           f"default kvq rows: {doc.get('fa3_level') or 'the default given V~ (KVQ_SAGE_FA3_LEVEL_DEFAULT_VT, gpu/sage/sage_fa3.h)'}",
           f"# B = batch, heads = query/KV heads ({HEADS} query heads; 8 KV heads: grouped, SDPA enable_gqa), d = {D},",
           "# nq = nk = N, tau = RN32(1/sqrt(128)); Q, K, V random normal binary32 (seeded per N, batch, KV heads);",
           "# kvq takes binary32 [B*32][N][128]; grouped, [B*8][N][128] K and V through kvq_cuda_sage_attn_gqa",
           "# ([SAGE-DEV-17]; a library without it: K and V repeated, its K/V stages 4x -- the row's gqa note says",
           "# which); the others binary16 [B][heads][N][128].",
           "# ms: CUDA events, median of the reps after warm-up, cold L2 (256 MiB written before each rep) and",
           "# host launch latency hidden; whole method per call (kvq: smoothing, dS, quantizers, attention;",
           "# sage1: K smoothing, quantization, attention). TFLOPS = 4 N^2 d heads B / t (half for causal).",
           "# xSDPA = fastest SDPA backend's time / the row's time (> 1: faster than it); xSage1 likewise.",
           "# floor = the row's attention FLOPs at the dense FP8/INT8 tensor rate "
           f"({fmt(doc.get('peak_fp8_tflops'), '.0f')} TFLOP/s) / its time (binary16 rows: their own floor is 2x this).",
           f"# accuracy [SAGE-MET-01..02] vs a binary64 reference of the binary32 inputs on about "
           f"{doc['samples'] * HEADS} random",
           "# query rows over all heads, flattened (the binary16 methods also carry their input rounding).",
           "",
           f"{'shape':12} {'N':>6} {'causal':>6} {'method':15} {'ms':>9} {'TFLOPS':>7} {'floor':>6} {'xSDPA':>6} "
           f"{'xSage1':>6} {'CosSim':>10} {'L1':>9} {'RMSE':>9} {'reps':>4}  notes"]
    for r in sorted(rows, key=sort_key):
        if r["state"] == "ok":
            m = r.get("metrics") or {}
            note = f"nonfinite {m['nonfinite']}" if m.get("nonfinite") else ""
            if "kvq_result" in r:
                note = (note + " " if note else "") + f"flags {r['kvq_result']['flags']}"
            if r.get("gqa") and r.get("kv_heads", HEADS) != HEADS:
                note = (note + " " if note else "") + r["gqa"]
            out.append(f"{shape_text(r):12} {r['N']:>6} {r['causal']:>6} {r['method']:15} {r['ms']:>9.3f} "
                       f"{r['tflops']:>7.1f} {fmt(r.get('floor_fraction'), '.3f'):>6} "
                       f"{fmt(r.get('speedup_vs_sdpa'), '.2f'):>6} {fmt(r.get('speedup_vs_sage1'), '.2f'):>6} "
                       f"{fmt(m.get('cossim'), '.7f'):>10} {fmt(m.get('l1'), '.3e'):>9} "
                       f"{fmt(m.get('rmse'), '.3e'):>9} {r['reps']:>4}  {note}")
        else:
            out.append(f"{shape_text(r):12} {r['N']:>6} {r['causal']:>6} {r['method']:15} "
                       f"{r['state'].upper()}: {r.get('reason', '')}")
    out += ["", "Goals, judged on the kvq rows (buffer 128) above:"]
    for key in ("speedup_vs_sdpa", "speedup_vs_sage1"):
        g = doc["goals"][key]
        if not g["measured"]:
            why = "; ".join(sorted({u["why"] for u in g["unmeasured"]})) or "no kvq rows"
            out.append(f"- {g['name']} (goal {g['goal']}): NOT measured ({why})")
            continue
        vals = g["values"]
        lo = min(vals, key=lambda x: x["ratio"])
        hi = max(vals, key=lambda x: x["ratio"])
        verdict = "MET" if g["met"] else "NOT met"
        unm = "" if g["measured"] == g["pairs"] else f", {g['pairs'] - g['measured']} not measured"

        def where(x):
            return f"B={x['batch']} KV={x['kv_heads']} N={x['N']}{' causal' if x['causal'] else ''}"
        out.append(f"- {g['name']} (goal {g['goal']}): {verdict}: {g['met_pairs']} of {g['pairs']} rows "
                   f"within it{unm}; from {lo['ratio']:.2f}x ({where(lo)}) to {hi['ratio']:.2f}x ({where(hi)})")
    split = [r for r in rows if r.get("stages_ms")]
    if split:
        out += ["", "Stage split of one kvq call (ms; kvq_cuda_sage_attn_stages, events between the stages, cold L2;",
                "smoothing K, smoothing Q, dS, Q+K quantizers, V quantizer, core):"]
        for r in sorted(split, key=sort_key):
            tot = sum(r["stages_ms"].values())
            out.append(f"{shape_text(r):12} {r['N']:>6} {r['causal']:>6} {r['method']:15} " +
                       stages_text(r["stages_ms"]) + f"  (sum {tot:.3f})")
    for k, what in (("speedup_vs_L0", "the default core vs the FA3 core at level 0 (kvq-b128-L0 / kvq-b128, "
                                      "whole pipeline)"),
                    ("speedup_vs_vt0", "the pipeline with V~ vs without (kvq-b128-vt0 / kvq-b128, KVQ_SAGE_VT=0, "
                                       "[SAGE-DEV-15])"),
                    ("speedup_vs_prev", "the pipeline vs the one before the stage kernels and level 4 "
                                        "(kvq-b128-prev / kvq-b128, KVQ_SAGE_STAGES=0 KVQ_SAGE_FA3_LEVEL=3)"),
                    ("speedup_vs_loop", "the default core vs the warpgroup core (kvq-b128-loop / kvq-b128, "
                                        "whole pipeline)")):
        lp = [r for r in rows if r.get(k)]
        if lp:
            out.append(f"- {what}: " + ", ".join(
                f"{shape_text(r)} N={r['N']}{' causal' if r['causal'] else ''}: {r[k]:.2f}x" for r in lp))
    b0 = [r for r in rows if r["method"] == "kvq-b0" and r["state"] == "ok"]
    if b0:
        out.append("- buffer 0 (informative): " + ", ".join(
            f"N={r['N']}{' causal' if r['causal'] else ''}: {fmt(r.get('speedup_vs_sdpa'), '.2f')}x SDPA, "
            f"cos {fmt((r.get('metrics') or {}).get('cossim'), '.6f')}" for r in b0))
    return "\n".join(out) + "\n"


def methods_order(m):
    order = [x for x, _ in SDPA_METHODS] + ["sage1", "kvq-b128", "kvq-b128-L0", "kvq-b128-vt0", "kvq-b128-prev",
                                             "kvq-b128-loop", "kvq-b0"]
    return order.index(m) if m in order else len(order)


def int_list(text, what):
    try:
        v = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        v = []
    if not v:
        sys.stderr.write(f"attn_bench: {what} '{text}': comma-separated integers\n")
        sys.exit(2)
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=None)
    ap.add_argument("--sizes", default="4096,8192,16384,32768")
    ap.add_argument("--batches", default="1", help="batch sizes, e.g. 1,4")
    ap.add_argument("--kv-heads", default=str(HEADS), help="KV heads (of 32 query heads), e.g. 32,8")
    ap.add_argument("--long", default="", help="sizes run non-causal at batch 1, 32 KV heads, last (e.g. 65536,131072)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--commit", default=os.environ.get("KVQ_COMMIT", "unknown"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="N = 4096 only, 3 reps")
    ap.add_argument("--samples", type=int, default=128, help="sampled query rows a head at 32 heads")
    ap.add_argument("--row-budget", type=float, default=8.0, help="seconds of timed calls per row, at most")
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds for the whole run")
    ap.add_argument("--no-buffer0", action="store_true", help="no kvq buffer=0 rows")
    ap.add_argument("--no-loop", action="store_true", help="no rows of the warpgroup core (KVQ_SAGE_CORE=loop)")
    ap.add_argument("--level0", action="store_true", help="rows of the FA3 core at level 0 (KVQ_SAGE_FA3_LEVEL=0)")
    ap.add_argument("--vt0", action="store_true",
                    help="rows of the pipeline without V~ (KVQ_SAGE_VT=0: the core transposes V, [SAGE-DEV-15])")
    ap.add_argument("--prev", action="store_true",
                    help="rows of the pipeline before the stage kernels and level 4 (KVQ_SAGE_STAGES=0, "
                         "KVQ_SAGE_FA3_LEVEL=3)")
    ap.add_argument("--no-stages", action="store_true", help="no stage split of the kvq rows")
    ap.add_argument("--no-isolate", action="store_true", help="run every group in this process")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-batch", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--child-kvh", type=int, default=HEADS, help=argparse.SUPPRESS)
    ap.add_argument("--child-causal", default="0,1", help=argparse.SUPPRESS)
    ap.add_argument("--child-first", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--frag", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--deadline-at", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.lib is None:
        args.lib = default_lib()
    if args.deadline_at is None:
        args.deadline_at = time.time() + args.deadline
    if args.child is not None:
        args.child_first = bool(args.child_first)
        return run_child(args)
    if args.quick:
        args.sizes, args.reps = "4096", 3
    sizes = int_list(args.sizes, "--sizes")
    batches = int_list(args.batches, "--batches")
    kvhs = int_list(args.kv_heads, "--kv-heads")
    longs = int_list(args.long, "--long") if args.long.strip() else []
    for h in kvhs:
        if h < 1 or HEADS % h:
            sys.stderr.write(f"attn_bench: --kv-heads {h}: a divisor of {HEADS}\n")
            return 2
    groups = [{"batch": b, "kv_heads": h, "sizes": sizes, "causals": [0, 1], "first": i == 0}
              for i, (b, h) in enumerate((b, h) for b in batches for h in kvhs)]
    if longs:
        groups.append({"batch": 1, "kv_heads": HEADS, "sizes": longs, "causals": [0], "first": False})
    outdir = args.out or os.environ.get("OUT") or "."
    os.makedirs(outdir, exist_ok=True)
    print(f"attn_bench: sizes {sizes}, batches {batches}, KV heads {kvhs}, long {longs}, reps {args.reps}, "
          f"library {args.lib}{'' if os.path.exists(args.lib) else ' (missing)'}", flush=True)
    meta, rows = {}, []
    for g in groups:
        m, r = run_group(args, g)
        for key, val in m.items():
            meta.setdefault(key, val)
        rows += r
    device = meta.get("device", "?")
    annotate(rows, device)
    peak = peak_fp8(device)
    doc = {"device": device, "torch": meta.get("torch", "?"), "cuda": meta.get("cuda"),
           "cudnn": meta.get("cudnn"), "triton": meta.get("triton"),
           "sageattention": meta.get("sageattention"), "commit": args.commit, "lib": args.lib,
           "batches": batches, "heads": HEADS, "kv_heads": kvhs, "d": D, "tau": TAU, "seed": SEED,
           "sizes": sizes, "long": longs, "reps": args.reps, "samples": args.samples, "fa3_level": BASE_LEVEL,
           "peak_fp8_tflops": peak / 1e12 if peak else None,
           "timing": "CUDA events on torch's current stream, median of reps after warm-up; 256 MiB written "
                     "and ~0.3 ms of torch.cuda._sleep before each rep (cold L2, host launch latency hidden); "
                     "reps cut to about --row-budget seconds of calls for slow rows",
           "flops": "4 N^2 d heads batch, halved for causal",
           "floor": "the row's FLOPs at the dense FP8/INT8 tensor rate over its time (PEAK_FP8)",
           "accuracy": "spec/sage.md [SAGE-MET-01..02] in binary64 against a float64 torch reference of the "
                       "binary32 inputs, on the sampled query rows of every head, flattened",
           "rows": rows}
    doc["goals"] = goals(rows)
    with open(os.path.join(outdir, "sage-attn-bench.json"), "w") as f:
        json.dump(clean(doc), f, indent=1)
    txt = summary(doc)
    with open(os.path.join(outdir, "sage-attn-bench.txt"), "w") as f:
        f.write(txt)
    print(txt, end="", flush=True)
    kv = [r for r in rows if r["method"].startswith("kvq")]
    return 0 if kv and all(r["state"] == "ok" for r in kv) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(2)
