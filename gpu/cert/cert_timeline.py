#!/usr/bin/env python3
"""cert_timeline.py -- where the time of one certified decode step goes, stage
by stage, on the device (spec/cert.md [CERT-DEV-09]).

Usage: cert_timeline.py LIB.so [--ns 32768,131072] [--reps 7] [--variant sparse|paper]
LIB.so is the diagnostics build of the benchmark library (make
gpu-cert-timeline: gpu/cert/decode_*.cu with -DKVQ_CERT_TIMELINE), whose
kernels stamp %globaltimer at their stage boundaries; it times the sparse
variant (default), whose kernels have the stamps, or the paper variant, whose
select kernel has them and whose Phase 2 and combine have none (its rows end
with the select kernel: the first and the last head's end).  The workload and the
cold L2 are those of gpu/cert/cert_bench.py; each row is one step repeated --reps
times, each stage the median over the query heads (over the Phase-2 CTAs
that had entries) and then over the repetitions.  Times are microseconds
from the start of Phase 1.  The stamps add barriers of their own to the
select kernel, so the sum is a little above the step's time in the benchmark.
"""
import argparse
import ctypes
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cert_bench  # noqa: E402  (the benchmark's workload and flush)

SEL = ["start", "wait", "masses", "scan", "select", "settle", "judge", "ladder",
       "list", "staged", "end"]
U64 = ctypes.c_ulonglong
TL_HEADS, TL_SEL_N, TL_P2CTAS, TL_P2_N = 64, 11, 512, 5


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def one_step(lib, ctx, cert, stream, flush):
    p1 = (U64 * 2)()
    sel = (U64 * (TL_HEADS * TL_SEL_N))()
    p2 = (U64 * (TL_P2CTAS * TL_P2_N))()
    if lib.kvq_cuda_cert_timeline(p1, sel, p2) != 0:    # clears the stamps
        raise RuntimeError("kvq_cuda_cert_timeline failed")
    flush.zero_()
    if lib.kvq_bench_step(ctx, cert, ctypes.c_void_p(stream)) != 0:
        raise RuntimeError("step failed")
    torch.cuda.synchronize()
    if lib.kvq_cuda_cert_timeline(p1, sel, p2) != 0:
        raise RuntimeError("kvq_cuda_cert_timeline failed")
    t0 = p1[0]
    heads = [[sel[h * TL_SEL_N + i] for i in range(TL_SEL_N)] for h in range(TL_HEADS)]
    heads = [h for h in heads if h[0] != 0]
    ctas = [[p2[c * TL_P2_N + i] for i in range(TL_P2_N)] for c in range(TL_P2CTAS)]
    ctas = [c for c in ctas if c[0] != 0]
    us = lambda t: (t - t0) / 1000.0
    r = {"phase1 end": us(p1[1])}
    for i, name in enumerate(SEL):
        if cert or name != "judge":
            r["select " + name] = med([us(h[i]) for h in heads])
    r["select first end"] = min(us(h[10]) for h in heads)
    r["select last end"] = max(us(h[10]) for h in heads)
    if not ctas:                                      # the paper variant: no Phase-2 stamps
        return r
    r["phase2 wait"] = med([us(c[1]) for c in ctas])
    r["phase2 entries (last)"] = max(us(c[2]) for c in ctas)
    comb = [c for c in ctas if c[4] != 0]
    r["combine start"] = med([us(c[3]) for c in comb])
    r["combine end (last)"] = max(us(c[4]) for c in comb)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--ns", default="32768,131072")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--variant", default="sparse", choices=("sparse", "paper"))
    ap.add_argument("--vtols", default="-1,0.25",
                    help="vtol of each row (-1: the default, 0.05)")
    a = ap.parse_args()
    variant = cert_bench.PAPER if a.variant == "paper" else cert_bench.SPARSE
    lib = cert_bench.load_lib(a.lib)
    lib.kvq_cuda_cert_timeline.argtypes = [ctypes.c_void_p] * 3
    kvh, group, d, scale = cert_bench.KVH, cert_bench.GROUP, cert_bench.D, cert_bench.SCALE
    gen = torch.Generator(device="cuda")
    gen.manual_seed(cert_bench.SEED)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"# gpu/cert/cert_timeline.py -- stage boundaries of one decode step, us from the start of "
          f"Phase 1 (medians)\n# device: {torch.cuda.get_device_name(0)}; commit "
          f"{os.environ.get('KVQ_COMMIT', 'unknown')}; 8 KV heads, 32 query heads, d = 128")
    for n in [int(x) for x in a.ns.split(",")]:
        for vtol in [float(x) for x in a.vtols.split(",")]:
            q, k, v = cert_bench.make_workload("sinks+clusters", kvh, group, n, d, gen)
            ctx = ctypes.c_void_p()
            if lib.kvq_bench_setup(ctypes.byref(ctx), kvh, group, n, d, k.data_ptr(),
                                   v.data_ptr(), q.data_ptr(), scale, vtol) != 0:
                print(f"setup failed n={n}", file=sys.stderr)
                return 2
            # the stage stamps are the sparse variant's kernels' (the paper
            # variant's Phase 2, decode_phase2p.cu, has none) [CERT-VAR-01]
            if lib.kvq_bench_variant(ctx, variant) != 0:
                return 2
            stream = torch.cuda.current_stream().cuda_stream
            for cert in (1, 0):
                one_step(lib, ctx, cert, stream, flush)             # warm-up
                runs = [one_step(lib, ctx, cert, stream, flush) for _ in range(a.reps)]
                print(f"\nn = {n}, sinks+clusters, {a.variant} variant, vtol "
                      f"{'0.05 (default)' if vtol < 0 else vtol}, certification {'on' if cert else 'off'}")
                prev = 0.0
                for key in runs[0]:
                    t = med([r[key] for r in runs])
                    print(f"  {key:24s} {t:8.1f}  ({t - prev:+6.1f})")
                    prev = t
            lib.kvq_bench_free(ctx)
            del q, k, v
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
