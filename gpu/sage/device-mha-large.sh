#!/bin/bash
# device-mha-large.sh -- the CUDA subject on SAGE's on-demand `large` vectors
# (spec/vectors.md [VEC-GEN-04] [VEC-SAGE-13]: sage-mha, 4,096 to 16,384 keys) in one
# device call.  The vectors (144 MB, more than a carry holds) are generated on the device
# machine, four shards at once (the exact path: about 150 s of one core in all, the
# largest shard 91 s), then `kvq verify` runs libkvq_subject_gpu.so on each shard, one
# report a shard (a shard of `kvq gen` is a whole vector file, not a `verify --shard` run,
# so the reports are not merged).  Programs built elsewhere (`make build/rel/kvq`,
# `make build/gpu/libkvq_subject_gpu.so`), carried in .devcarry/sage/ (kvq,
# libkvq_subject_gpu.so); MPFR/GMP in .devcarry/lib.  The reference passes the same four
# cases on the host: `kvq verify --subject ref-fast`.
# usage: gpu/sage/device-mha-large.sh   (outputs under $OUT; env KVQ_COMMIT)
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
C=.devcarry/sage
OUT=${OUT:-/tmp/kvq-mha-large-out}
COMMIT=${KVQ_COMMIT:-unknown}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
rc=0
{ echo "# kvq gen --family sage --level large, 4 shards at once, on $dev's host; commit $COMMIT"
  pids=()
  for i in 0 1 2 3; do
    /usr/bin/time -f "shard $i/4: %e s wall, %U s user" timeout 400 "$C/kvq" gen --family sage --level large \
      --shard $i/4 -o "$W/large-$i.vec" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || echo "a gen shard failed"; done
  ls -l "$W"; } > "$OUT/sage-large-gen.txt" 2>&1
grep -q "failed" "$OUT/sage-large-gen.txt" && rc=1
{ echo "# kvq verify, CUDA subject, sage large vectors (sage-mha) on $dev; commit $COMMIT"
  for i in 0 1 2 3; do
    # sage-mha claimed: a skip fails [VER-REG-03]
    timeout 100 "$C/kvq" verify --vectors "$W/large-$i.vec" --subject "$C/libkvq_subject_gpu.so" --ops sage-mha \
      --json "$OUT/sage-large-$i.json"; echo "kvq verify shard $i exit $?"
  done
} > "$OUT/sage-large-verify-gpu.txt" 2>&1
[ "$(grep -c ' exit 0$' "$OUT/sage-large-verify-gpu.txt")" = 4 ] || rc=1
exit $rc
