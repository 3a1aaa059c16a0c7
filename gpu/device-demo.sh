#!/usr/bin/env bash
# gpu/device-demo.sh -- run on a machine with a CUDA device: build the GPU subject
# and run `kvq demo` with it, so the GPU kernels are judged against the exact
# path's vectors by the same verifier vendors use.  KVQ (the kvq binary) and
# KVQ_LIBDIR (MPFR/GMP shared libraries, when the machine lacks them) may be
# given; reports go to ${OUT:-build/device-demo}.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/device-demo}
KVQ=${KVQ:-build/rel/kvq}
[ -n "${KVQ_LIBDIR:-}" ] && export LD_LIBRARY_PATH="$KVQ_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
make -j"$(nproc)" build/gpu/libkvq_subject_gpu.so >/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
git rev-parse HEAD 2>/dev/null | tee -a "$OUT/device.txt" || true
"$KVQ" demo --out /tmp/kvq-demo --gpu-subject build/gpu/libkvq_subject_gpu.so 2>&1 | tee "$OUT/demo.txt"
rc=${PIPESTATUS[0]}
cp /tmp/kvq-demo/gpu.json "$OUT/demo-gpu.json" 2>/dev/null || true
cp /tmp/kvq-demo/ref-fast.json "$OUT/demo-ref-fast.json" 2>/dev/null || true
exit "$rc"
