"""tests/toy/check_kvqio.py -- kvqio meets a family it was never told about.

Run by tests/toy/toy.sh in its scratch tree (KVQ_TOY_TREE) with the toy
family's registry description (KVQ_REGISTRY) and vectors (KVQ_TOY_VECTORS).
kvqio knows the toy family only through the description: it must read the
vectors, re-encode them byte for byte, and write the results of a kernel of
its own (y = 2 x in binary32, computed here, not copied from the vectors)
that kvq verify passes; a wrong result must fail.  SPEC: [VER-REG-12]
"""
import math
import os
import subprocess
import sys
import tempfile

import kvqio

tree, vec = os.environ["KVQ_TOY_TREE"], os.environ["KVQ_TOY_VECTORS"]
kvq = os.path.join(tree, "build", "rel", "kvq")
fail = 0


def check(cond, what):
    global fail
    print("  %s %s" % ("ok  " if cond else "FAIL", what))
    fail += 0 if cond else 1


vf = kvqio.read_vectors(vec)
check(vf.family == "toy", "kvqio reads the toy vectors (family %s, %d cases)" % (vf.family, len(vf.cases)))
with open(vec) as fh:
    check(vf.to_text() == fh.read(), "the toy vectors re-encode byte for byte")


def kernel(x):
    """The toy operation's statuses and values, from spec/toy.md's rule."""
    if len(x) == 0 or len(x) > 4096:
        return kvqio.KVQ_E_SHAPE, None
    if any(not math.isfinite(v) for v in x):
        return kvqio.KVQ_E_NONFINITE, None
    y = [kvqio.rn32(2 * v) for v in x]
    if any(math.isinf(v) for v in y):
        return kvqio.KVQ_E_RANGE, None
    return kvqio.KVQ_OK, y


def write(path, corrupt):
    with kvqio.ResultsWriter(path, "python-toy") as w:
        first = True
        for c in vf.cases:
            st, y = kernel(list(c["x"]) if c["n"] <= 4096 else [])
            if st != kvqio.KVQ_OK:
                w.result(c, st)
                continue
            if corrupt and first:
                y[0] = kvqio.rn32(y[0] + 1.0)
                first = False
            w.result(c, st, c.encode_outputs({"y": y}))


with tempfile.TemporaryDirectory() as d:
    good, bad = os.path.join(d, "good.res"), os.path.join(d, "bad.res")
    write(good, False)
    write(bad, True)
    r = subprocess.run([kvq, "verify", "--vectors", vec, "--results", good], capture_output=True, text=True)
    check(r.returncode == 0, "kvq verify passes kvqio's toy results (exit %d: %s)"
          % (r.returncode, r.stdout.strip().splitlines()[-1:]))
    r = subprocess.run([kvq, "verify", "--vectors", vec, "--results", bad], capture_output=True, text=True)
    check(r.returncode == 1 and "FAIL" in r.stdout, "a wrong toy result written by kvqio fails (exit %d)" % r.returncode)

sys.exit(1 if fail else 0)
