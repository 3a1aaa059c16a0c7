#!/usr/bin/env python3
"""fp8_matrix.py -- torch's FP8 casts against kvq's policies; merges the matrix.

usage: fp8_matrix.py DIR OUT_PREFIX COMMIT

DIR holds what kvq_sage_fp8_matrix wrote (gpu/sage/fp8_matrix.cu): the inputs
(in_f16.u32, in_f32.u32), kvq's codes under both overflow policies
(kvq_<f16|f32>_<e4m3|e5m2>_<saturate|nan>.u8, computed by ref/common/fp8.c) and
the CUDA rows (cuda.json).  Adds the rows of torch's eager casts on the device,
.to(torch.float8_e4m3fn) and .to(torch.float8_e5m2), from float32 and from
float16 tensors, and of ml_dtypes when importable (host); writes
OUT_PREFIX.json and OUT_PREFIX.txt.  Comparison is bitwise on the code byte.
"""
import json
import os
import sys

import numpy as np


def main():
    d, prefix, commit = sys.argv[1], sys.argv[2], sys.argv[3]
    cuda = json.load(open(os.path.join(d, "cuda.json")))
    rows = list(cuda["rows"])
    notes = []
    inputs = {
        "f16": np.fromfile(os.path.join(d, "in_f16.u32"), dtype=np.uint32),
        "f32": np.fromfile(os.path.join(d, "in_f32.u32"), dtype=np.uint32),
    }
    ref = {}
    for src in ("f16", "f32"):
        for fmt in ("e4m3", "e5m2"):
            for pol in ("saturate", "nan"):
                ref[src, fmt, pol] = np.fromfile(
                    os.path.join(d, "kvq_%s_%s_%s.u8" % (src, fmt, pol)), dtype=np.uint8)

    def add_row(src, fmt, lib, codes):
        n = len(codes)
        row = {"inputs": "binary16 all" if src == "f16" else "binary32 sweep", "n": int(n),
               "library": lib, "format": fmt.upper()}
        for pol in ("saturate", "nan"):
            r = ref[src, fmt, pol]
            bad = np.nonzero(codes != r)[0]
            w = 4 if src == "f16" else 8
            row["kvq_" + pol] = {
                "match": int(n - len(bad)), "mismatch": int(len(bad)),
                "first_mismatches_input_lib_kvq": [
                    ["0x%0*x" % (w, int(inputs[src][i])), "0x%02x" % int(codes[i]),
                     "0x%02x" % int(r[i])] for i in bad[:8]]}
        rows.append(row)

    def host_values(src):
        u = inputs[src]
        if src == "f16":
            return u.astype(np.uint16).view(np.float16)
        return u.view(np.float32)

    try:
        import torch
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        notes.append("torch %s, casts on %s" % (torch.__version__, dev))
        for src in ("f16", "f32"):
            v = torch.from_numpy(host_values(src).copy()).to(dev)
            for fmt, dt in (("e4m3", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)):
                c = v.to(dt).view(torch.uint8).cpu().numpy()
                add_row(src, fmt, "torch %s .to(%s) from %s" % (dev, str(dt), "float16" if src == "f16" else "float32"), c)
    except Exception as e:  # noqa: BLE001 -- report, never hide
        notes.append("torch rows not measured: %r" % (e,))
    try:
        import ml_dtypes
        notes.append("ml_dtypes %s (host)" % ml_dtypes.__version__)
        for src in ("f16", "f32"):
            v = host_values(src)
            for fmt, dt in (("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
                with np.errstate(all="ignore"):
                    c = v.astype(dt).view(np.uint8)
                add_row(src, fmt, "ml_dtypes astype(%s) from %s" % (dt.__name__, "float16" if src == "f16" else "float32"), c)
    except ImportError as e:
        notes.append("ml_dtypes absent on the device (%s)" % (e,))

    out = {"commit": commit, "device": cuda["device"], "notes": notes,
           "policies": {"kvq_saturate": "overflow -> +-max finite (E4M3 0x7e, E5M2 0x7b)",
                        "kvq_nan": "overflow -> E4M3 NaN 0x7f / E5M2 Inf 0x7c (sign kept); NaN in -> sign|0x7f"},
           "rows": rows}
    json.dump(out, open(prefix + ".json", "w"), indent=1)
    with open(prefix + ".txt", "w") as f:
        f.write("# gpu/reports/sage-fp8-matrix.txt -- FP8 conversions measured on the device vs kvq's policies\n")
        f.write("# gpu/sage/fp8_matrix.cu + fp8_matrix.py; device %s; commit %s\n" % (cuda["device"], commit))
        f.write("# kvq reference: ref/common/fp8.c; saturate = overflow to +-max finite; nan = E4M3 NaN / E5M2 Inf\n")
        f.write("# inputs: binary16 all = 65,536 encodings; binary32 sweep = every 2^12-th encoding, all of\n")
        f.write("#   448..480 and 57344..61440 both signs, Inf and NaN encodings\n")
        for nline in notes:
            f.write("# %s\n" % nline)
        f.write("%-15s %-5s %-62s %22s %22s\n" % ("inputs", "fmt", "library / mode", "= kvq saturate", "= kvq nan/inf"))
        for r in rows:
            f.write("%-15s %-5s %-62s %10d/%-11d %10d/%-11d\n" % (
                r["inputs"], r["format"], r["library"], r["kvq_saturate"]["match"], r["n"],
                r["kvq_nan"]["match"], r["n"]))
        f.write("\nfirst mismatches (input, library code, kvq code):\n")
        for r in rows:
            for pol in ("kvq_saturate", "kvq_nan"):
                m = r[pol]["first_mismatches_input_lib_kvq"]
                if m:
                    f.write("%s %s %s vs %s: %s\n" % (r["inputs"], r["format"], r["library"], pol,
                                                      " ".join("%s->%s(kvq %s)" % tuple(x) for x in m)))


if __name__ == "__main__":
    main()
