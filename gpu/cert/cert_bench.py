#!/usr/bin/env python3
"""cert_bench.py -- one decode step, side by side, on the device:
torch.nn.functional.scaled_dot_product_attention on binary16 K, V (GQA:
32 query heads over 8 KV heads, d = 128) against the certified CERT decode
step of gpu/cert/decode_*.cu, both variants [CERT-VAR-01] on the same
tensors: the paper variant (the default; Phase 2 over every block,
[CERT-DEV-10]) and the sparse one, certification on and off (spec/cert.md
"The device kernel", [CERT-DEV-09]).  Workloads: "sinks+clusters" (a few heavy
tokens: sparse attention) and "near-uniform".

Usage: cert_bench.py LIB.so OUT.json [--reps N] [--ns 8192,32768,...]
                     [--workloads sinks+clusters,near-uniform] [--floor FLOOR.json] [--profile]
The paper variant is timed with its early segment pass (the default: Phase 2
takes the segments while the select kernel runs, [CERT-DEV-10]) and, side by
side, without it (Phase 2 waits for the select kernel: "seq"); both give the
same output bit for bit (checked here too).
Timing: CUDA events around each repetition, after warm-up; medians.  Before
each repetition a 256 MiB buffer is written: the L2 is cold, and the device is
busy while the host enqueues the repetition (launch latency is not timed).
--floor: the JSON report of gpu/cert/cert_floor.cu (same device): the floor
of each row is what the paper variant's bytes alone cost there: every
block's INT8 keys and INT4 values (with their metadata) read at the device's
streaming rate ("read_paper"), and the binary16 keys (and original values)
of the blocks its heads select read over the host link at the rate measured
with 32 CTAs ("host"); both as separate times and overlapped (their maximum).
--profile: one step of each variant per row, no SDPA and no timing (for a
per-kernel profiler such as ncu); OUT.json is not written.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F


class Rec(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in
                ("version", "rung", "n", "d", "k_sel", "n_prom", "checks")] + \
               [(n, ctypes.c_float) for n in
                ("delta", "alpha_hat", "vmax", "ekey", "ekey_paper", "eval", "earith", "etotal")]


def make_workload(kind, kvh, group, n, d, gen):
    """K, V binary16 [kvh][n][d]; q binary16 [kvh*group][d]."""
    q = torch.randn(kvh * group, d, generator=gen, device="cuda")
    if kind == "near-uniform":
        k = torch.randn(kvh, n, d, generator=gen, device="cuda") * 0.02
    else:
        # a few sink tokens and clustered relevant blocks per KV head, aligned
        # with that head's queries; the bulk is small noise
        k = torch.randn(kvh, n, d, generator=gen, device="cuda") * 0.5
        for h in range(kvh):
            qs = q[h * group:(h + 1) * group]
            dirn = qs / qs.norm(dim=1, keepdim=True)
            rel = list(range(4))                       # sinks
            for c in range(4):                         # 4 clusters of 32 tokens
                s = int(torch.randint(16, n - 64, (1,), generator=gen, device="cuda"))
                rel += list(range(s, s + 32))
            for j, t in enumerate(rel):
                k[h, t] = dirn[j % group] * (14.0 * d ** 0.5 / qs[j % group].norm()) \
                    + torch.randn(d, generator=gen, device="cuda") * 0.05
    v = torch.randn(kvh, n, d, generator=gen, device="cuda")
    return q.half(), k.half().contiguous(), v.half().contiguous()


FLUSH = None

# the benchmark's shape: 8 KV heads, 32 query heads (GQA), d = 128; scale 1/sqrt(d)
KVH, GROUP, D = 8, 4, 128
SCALE = float.fromhex("0x1.6a09e6p-4")
SEED = 20260521
PAPER, SPARSE = 0, 1            # KVQ_CERT_VARIANT_* (include/kvq_cert.h)
BLOCK_KEY_BYTES = 16 * D * 2    # a block's binary16 keys (or values) in tier 2


def load_lib(path, old=False):
    """The benchmark library (gpu/cert/cert_bench.cu) with its entry points typed
    (old: a library of an earlier commit, without kvq_bench_overlap)."""
    lib = ctypes.CDLL(path)
    lib.kvq_bench_setup.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint32,
                                    ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_float, ctypes.c_float]
    lib.kvq_bench_step.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lib.kvq_bench_fetch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_void_p]
    lib.kvq_bench_free.argtypes = [ctypes.c_void_p]
    lib.kvq_bench_variant.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.kvq_bench_listed.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    if not old:
        lib.kvq_bench_overlap.argtypes = [ctypes.c_void_p, ctypes.c_int]
    assert lib.kvq_bench_record_size() == ctypes.sizeof(Rec)
    return lib


def time_fn(fn, reps, warm):
    """Device time of fn, cold L2: before each repetition a 256 MiB buffer is
    written (evicting the 50 MiB L2 and keeping the device busy while the host
    enqueues fn and its events, so host launch latency is not timed)."""
    global FLUSH
    if FLUSH is None:
        FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ev = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        FLUSH.zero_()
        a.record()
        fn()
        b.record()
        ev.append((a, b))
    torch.cuda.synchronize()
    ts = [a.elapsed_time(b) * 1000.0 for a, b in ev]   # microseconds
    return statistics.median(ts), min(ts)


def floor_model(fl):
    """From cert_floor's JSON: read time of the paper bytes by n (linear
    interpolation in n; the measured rows) and the host link's rate (bytes/us)
    with 32 CTAs of 16 blocks."""
    rp = sorted((r["n"], r["read_us"]) for r in fl["read_paper"])
    host = [h for h in fl["host"] if h["ctas"] == 32]
    h = host[0] if host else max(fl["host"], key=lambda x: x["ctas"] * x["blocks_per_cta"])
    rate = h["ctas"] * h["blocks_per_cta"] * BLOCK_KEY_BYTES / h["in_kernel_us"]

    def dev_us(n):
        for (n0, t0), (n1, t1) in zip(rp, rp[1:]):
            if n0 <= n <= n1:
                return t0 + (t1 - t0) * (n - n0) / (n1 - n0)
        (n0, t0), (n1, t1) = (rp[0], rp[1]) if n < rp[0][0] else (rp[-2], rp[-1])
        return t0 + (t1 - t0) * (n - n0) / (n1 - n0)
    return dev_us, rate, fl.get("device", "?")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--ns", default="8192,16384,32768,65536,131072")
    ap.add_argument("--floor", default=None)
    ap.add_argument("--workloads", default="sinks+clusters,near-uniform")
    ap.add_argument("--lib-old", default=None,
                    help="the benchmark library of an earlier commit: its paper variant is timed "
                         "on the same tensors too (KVQ_COMMIT_OLD names the commit)")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    lib = load_lib(a.lib)
    lib_old = load_lib(a.lib_old, old=True) if a.lib_old else None
    kvh, group, d = KVH, GROUP, D
    qh = kvh * group
    scale = SCALE
    dev = torch.cuda.get_device_name(0)
    fm = None
    if a.floor:
        with open(a.floor) as f:
            fm = floor_model(json.load(f))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(SEED)
    rows = []
    for n in [int(x) for x in a.ns.split(",")]:
        for kind in a.workloads.split(","):
            if kind not in ("sinks+clusters", "near-uniform"):
                print(f"--workloads: unknown workload '{kind}'", file=sys.stderr)
                return 2
            q, k, v = make_workload(kind, kvh, group, n, d, gen)
            ctx = ctypes.c_void_p()
            st = lib.kvq_bench_setup(ctypes.byref(ctx), kvh, group, n, d, k.data_ptr(),
                                     v.data_ptr(), q.data_ptr(), scale, -1.0)
            if st != 0:
                print(f"setup failed n={n} {kind}: status {st}", file=sys.stderr)
                return 2
            stream = torch.cuda.current_stream().cuda_stream
            step = lambda: lib.kvq_bench_step(ctx, 1, ctypes.c_void_p(stream))
            step_off = lambda: lib.kvq_bench_step(ctx, 0, ctypes.c_void_p(stream))
            ctx_old = None
            if lib_old is not None:
                ctx_old = ctypes.c_void_p()
                if lib_old.kvq_bench_setup(ctypes.byref(ctx_old), kvh, group, n, d, k.data_ptr(),
                                           v.data_ptr(), q.data_ptr(), scale, -1.0) != 0:
                    print(f"setup (old library) failed n={n} {kind}", file=sys.stderr)
                    return 2
                step_old = lambda: lib_old.kvq_bench_step(ctx_old, 1, ctypes.c_void_p(stream))
            if a.profile:
                # one step each: paper (early segment pass), paper (without it), sparse,
                # the old library's paper step
                for var, ov in ((PAPER, 1), (PAPER, 0), (SPARSE, 1)):
                    lib.kvq_bench_variant(ctx, var)
                    lib.kvq_bench_overlap(ctx, ov)
                    torch.cuda.synchronize()
                    if step() != 0:
                        print(f"step failed n={n} {kind}", file=sys.stderr)
                        return 2
                    torch.cuda.synchronize()
                lib.kvq_bench_overlap(ctx, 1)
                if ctx_old is not None:
                    if step_old() != 0:
                        return 2
                    torch.cuda.synchronize()
                    lib_old.kvq_bench_free(ctx_old)
                print(f"profiled n={n} {kind}", flush=True)
                lib.kvq_bench_free(ctx)
                del q, k, v
                torch.cuda.empty_cache()
                continue
            qq = q.view(1, qh, 1, d)
            kk = k.view(1, kvh, n, d)
            vv = v.view(1, kvh, n, d)
            # dense rung 3 reads tier 2 over PCIe: fewer repetitions
            reps = a.reps if kind != "near-uniform" else max(5, a.reps // 20)
            sdpa = lambda: F.scaled_dot_product_attention(qq, kk, vv, scale=scale, enable_gqa=True)
            t_sdpa, _ = time_fn(sdpa, a.reps, 20)
            o_ref = sdpa().float().view(qh, d)
            res = {}
            for var, name in ((PAPER, "paper"), (SPARSE, "sparse")):
                if lib.kvq_bench_variant(ctx, var) != 0:
                    return 2
                t, _ = time_fn(step, reps, 5)
                # the same kernels with certification off (certify = 0: no Delta', delta1,
                # checks or bounds): what certifying costs [CERT-DEV-09]
                t_off, _ = time_fn(step_off, reps, 5)
                recs = (Rec * qh)()
                stat = (ctypes.c_uint32 * qh)()
                out = (ctypes.c_float * (qh * d))()
                if step() != 0 or lib.kvq_bench_fetch(ctx, recs, stat, out) != 0:
                    print(f"step failed n={n} {kind} {name}", file=sys.stderr)
                    return 2
                o = torch.tensor(list(out), device="cuda").view(qh, d)
                r = {"us": t, "ratio_sdpa": t / t_sdpa, "us_nocert": t_off, "cert_overhead": t / t_off - 1.0,
                     "rungs": [x.rung for x in recs], "k_sel": [x.k_sel for x in recs],
                     "n_prom": [x.n_prom for x in recs], "status": [int(x) for x in stat],
                     "etotal_max": max(x.etotal for x in recs),
                     "ekey_max": max(x.ekey for x in recs),
                     "eval_max": max(x.eval for x in recs),
                     "earith_max": max(x.earith for x in recs),
                     "vmax_max": max(x.vmax for x in recs),
                     # informative only: SDPA is itself approximate (binary16 output)
                     "dist_to_sdpa_max": float((o - o_ref).norm(dim=1).max())}
                if var == PAPER:
                    # without the early segment pass: Phase 2 waits for the select kernel
                    # (the step before [CERT-DEV-10]); the same output bit for bit
                    lib.kvq_bench_overlap(ctx, 0)
                    t_seq, _ = time_fn(step, reps, 5)
                    out2 = (ctypes.c_float * (qh * d))()
                    if step() != 0 or lib.kvq_bench_fetch(ctx, recs, stat, out2) != 0:
                        print(f"step failed n={n} {kind} {name} (seq)", file=sys.stderr)
                        return 2
                    lib.kvq_bench_overlap(ctx, 1)
                    r["us_seq"] = t_seq
                    r["ratio_seq_sdpa"] = t_seq / t_sdpa
                    r["seq_same_bits"] = bytes(out) == bytes(out2)
                    if ctx_old is not None:
                        # the earlier commit's kernels on the same tensors, the same output
                        t_old, _ = time_fn(step_old, reps, 5)
                        out3 = (ctypes.c_float * (qh * d))()
                        if step_old() != 0 or lib_old.kvq_bench_fetch(ctx_old, recs, stat, out3) != 0:
                            print(f"step failed n={n} {kind} (old library)", file=sys.stderr)
                            return 2
                        r["us_old"] = t_old
                        r["old_commit"] = os.environ.get("KVQ_COMMIT_OLD", "unknown")
                        r["old_same_bits"] = bytes(out) == bytes(out3)
                    if not r["seq_same_bits"]:
                        print(f"n={n} {kind}: the output with and without the early segment pass "
                              "differs", file=sys.stderr)
                    listed = (ctypes.c_uint32 * kvh)()
                    orig = (ctypes.c_uint32 * kvh)()
                    if lib.kvq_bench_listed(ctx, listed, orig) == 0:
                        r["listed_blocks"] = list(listed)
                        r["orig_value_blocks"] = list(orig)
                res[name] = r
            row = {"n": n, "workload": kind, "vtol": "default 0.05", "sdpa_us": t_sdpa,
                   "paper": res["paper"], "sparse": res["sparse"], "reps": reps}
            if fm is not None and "listed_blocks" in res["paper"]:
                dev_us, rate, _ = fm
                hb = (sum(res["paper"]["listed_blocks"]) + sum(res["paper"]["orig_value_blocks"])) \
                    * BLOCK_KEY_BYTES
                fd, fh = dev_us(n), hb / rate
                row["floor"] = {"device_us": fd, "host_us": fh, "host_bytes": hb,
                                "overlapped_us": max(fd, fh), "serial_us": fd + fh,
                                "ratio_paper_floor": res["paper"]["us"] / max(fd, fh),
                                "ratio_floor_sdpa": max(fd, fh) / t_sdpa}
            rows.append(row)
            p, sp = res["paper"], res["sparse"]
            fl = row.get("floor")
            print(f"n={n:6d} {kind:15s} sdpa {t_sdpa:8.1f} us  paper {p['us']:9.1f} us "
                  f"({p['ratio_sdpa']:5.2f}x; seq {p['us_seq']:.1f} us {p['ratio_seq_sdpa']:.2f}x"
                  + (f"; old {p['us_old']:.1f} us {p['us_old'] / t_sdpa:.2f}x" if 'us_old' in p else "")
                  + f")  sparse {sp['us']:9.1f} us ({sp['ratio_sdpa']:5.2f}x)  "
                  f"rungs {sorted(set(p['rungs']))}/{sorted(set(sp['rungs']))} "
                  f"K {min(p['k_sel'])}..{max(p['k_sel'])}"
                  + (f"  floor {fl['overlapped_us']:.1f} us" if fl else ""), flush=True)
            lib.kvq_bench_free(ctx)
            if ctx_old is not None:
                lib_old.kvq_bench_free(ctx_old)
            del q, k, v
            torch.cuda.empty_cache()
    if a.profile:
        return 0
    commit = os.environ.get("KVQ_COMMIT", "unknown")
    with open(a.out, "w") as f:
        json.dump({"device": dev, "torch": torch.__version__, "commit": commit, "kv_heads": kvh,
                   "query_heads": qh, "d": d, "timing": "CUDA events, median of reps after warm-up; L2 flushed "
                   "(256 MiB written) before each rep, which also hides host launch latency",
                   "floor_source": a.floor, "rows": rows}, f, indent=1)
    txt = a.out[:-5] + ".txt" if a.out.endswith(".json") else a.out + ".txt"
    with open(txt, "w") as f:
        f.write(summary(rows, dev, commit, os.path.basename(txt)))
    # the early segment pass must not change the output
    return 1 if any(not r["paper"]["seq_same_bits"] or not r["paper"].get("old_same_bits", True)
                    for r in rows) else 0


def summary(rows, dev, commit, name):
    """The text report: every row (both variants against SDPA, the paper
    variant against its floor), then the goal judged on the measured ratios:
    the paper variant at most 1.0x SDPA for n >= 32768 on the sparse workload."""
    out = [f"# gpu/reports/{name} -- one decode step, SDPA vs the certified CERT kernel, both variants",
           f"# device: {dev}; torch {torch.__version__}; commit {commit}; gpu/cert/cert_bench.py",
           "# 8 KV heads, 32 query heads (GQA, enable_gqa=True), d = 128, binary16 K/V; CUDA events,",
           "# medians, cold L2 (256 MiB written before each rep, so host launch latency is not timed);",
           "# certification on, default parameters (vtol 0.05); the same tensors for all three;",
           "# pap_off / spa_off: the same step with certification off, overhead = on / off - 1.",
           "# pap_seq: the paper variant without the early segment pass (Phase 2 waits for the",
           "# select kernel), certification on; same=Y: its output equals paper_us's bit for bit.",
           "# paper: Phase 2 over every block, binary16 keys of the selected blocks from tier 2",
           "# [CERT-DEV-10]; sparse: Phase 2 over the selected blocks with their INT8 keys.",
           "# floor: the paper variant's bytes alone -- every block's INT8 keys and INT4 values with",
           "# metadata at the device's streaming read rate (dev), the listed blocks' binary16 keys and",
           "# original values over the host link (host); 'floor' = max(dev, host) (overlapped).",
           "",
           f"{'n':>7} {'workload':15} {'sdpa_us':>8} {'paper_us':>9} {'sparse_us':>9} "
           f"{'pap/sdpa':>8} {'spa/sdpa':>8} {'dev_us':>7} {'host_us':>7} {'floor':>7} "
           f"{'pap/floor':>9} {'pap_off':>8} {'spa_off':>8} {'ovh_p':>6} {'ovh_s':>6} {'pap_seq':>8} {'seq/sdpa':>8} same  rungs(p/s)  K       prom   listed"]
    for r in rows:
        p, sp, fl = r["paper"], r["sparse"], r.get("floor")
        fcol = (f"{fl['device_us']:>7.1f} {fl['host_us']:>7.1f} {fl['overlapped_us']:>7.1f} "
                f"{fl['ratio_paper_floor']:>9.2f}") if fl else f"{'-':>7} {'-':>7} {'-':>7} {'-':>9}"
        lst = sum(p.get("listed_blocks", [0]))
        out.append(f"{r['n']:>7} {r['workload']:15} {r['sdpa_us']:>8.1f} {p['us']:>9.1f} {sp['us']:>9.1f} "
                   f"{p['ratio_sdpa']:>8.2f} {sp['ratio_sdpa']:>8.2f} {fcol} "
                   f"{p['us_nocert']:>8.1f} {sp['us_nocert']:>8.1f} {100 * p['cert_overhead']:>5.1f}% "
                   f"{100 * sp['cert_overhead']:>5.1f}% {p['us_seq']:>8.1f} {p['ratio_seq_sdpa']:>8.2f} "
                   f"{'Y' if p['seq_same_bits'] else 'N':>4}  "
                   f"{sorted(set(p['rungs']))!s}/{sorted(set(sp['rungs']))!s:5} "
                   f"{min(p['k_sel'])}-{max(p['k_sel'])}  {min(p['n_prom'])}-{max(p['n_prom'])}  {lst}")
    sparse = [r for r in rows if r["workload"] != "near-uniform"]
    big = [r for r in sparse if r["n"] >= 32768]
    met = [r for r in big if r["paper"]["ratio_sdpa"] <= 1.0]
    out += ["", "Goal, judged on the rows above:"]
    if big:
        w = max(big, key=lambda r: r["paper"]["ratio_sdpa"])
        b = min(big, key=lambda r: r["paper"]["ratio_sdpa"])
        out.append(f"- paper variant <= 1.0x SDPA for n >= 32768 (sinks+clusters): "
                   f"{'MET' if len(met) == len(big) else 'NOT met'} ({len(met)} of {len(big)} rows within it); "
                   f"paper/sdpa from {b['paper']['ratio_sdpa']:.2f} (n={b['n']}) to "
                   f"{w['paper']['ratio_sdpa']:.2f} (n={w['n']})")
        fl = [r for r in big if "floor" in r]
        if fl:
            out.append("- the floor against SDPA (sinks+clusters, n >= 32768): " + ", ".join(
                f"n={r['n']}: floor {r['floor']['overlapped_us']:.1f} us = {r['floor']['ratio_floor_sdpa']:.2f}x SDPA, "
                f"paper {r['floor']['ratio_paper_floor']:.2f}x floor" for r in fl))
    if sparse:
        ov = [(r["n"], v, r[v]["cert_overhead"]) for r in sparse for v in ("paper", "sparse")]
        within = [x for x in ov if x[2] <= 0.10]
        worst = max(ov, key=lambda x: x[2])
        out.append(f"- certification overhead <= 10% (sinks+clusters, on / off - 1): "
                   f"{'MET' if len(within) == len(ov) else 'NOT met'} ({len(within)} of {len(ov)} rows); "
                   f"worst {100 * worst[2]:.1f}% ({worst[1]}, n={worst[0]})")
    if rows:
        diff = [r for r in rows if not r["paper"]["seq_same_bits"]]
        out.append(f"- the paper variant with and without the early segment pass, bit for bit: "
                   f"{'equal on every row' if not diff else 'DIFFERENT on ' + str(len(diff)) + ' rows'}; "
                   "time with it / without it: " + ", ".join(
                       f"n={r['n']} {r['workload']}: {r['paper']['us'] / r['paper']['us_seq']:.2f}"
                       for r in rows))
    old = [r for r in rows if "us_old" in r["paper"]]
    if old:
        out.append(f"- the paper variant of commit {old[0]['paper']['old_commit']} on the same tensors "
                   "(same output bit for bit: "
                   + ("yes" if all(r["paper"]["old_same_bits"] for r in old) else "NO") + "): " + ", ".join(
                       f"n={r['n']} {r['workload']}: {r['paper']['us_old']:.1f} us = "
                       f"{r['paper']['us_old'] / r['sdpa_us']:.2f}x SDPA; now {r['paper']['us'] / r['paper']['us_old']:.2f} "
                       f"of it (without the early pass {r['paper']['us_seq'] / r['paper']['us_old']:.2f})"
                       for r in old))
    uni = [r for r in rows if r["workload"] == "near-uniform"]
    if uni:
        out.append("- near-uniform keys (the ladder reaches rung 3, whose dense pass reads tier 2): " + ", ".join(
            f"n={r['n']}: rungs {sorted(set(r['paper']['rungs']))} paper {r['paper']['us'] / 1000:.2f} ms, "
            f"sparse {r['sparse']['us'] / 1000:.2f} ms" for r in uni))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
