#!/bin/bash
# device-attn.sh -- the SAGE attention checks in one device call (programs built
# elsewhere with `make gpu` and `make build/rel/kvq`, carried in .devcarry/sage/:
# kvq_gpu_sage_attn_test, kvq_sage_ex2_sweep, kvq, libkvq_subject_gpu.so and the
# vectors sage-standard.vec from `kvq gen --family sage --level standard`;
# MPFR/GMP in .devcarry/lib): the attention test, its --long cases, the exp2
# sweep, `kvq verify` of the CUDA subject (sage-pv and sage-mha included) and an ncu profile
# of the core.  The benchmark is gpu/sage/device-attn-bench.sh.
# usage: gpu/sage/device-attn.sh   (outputs under $OUT; env KVQ_COMMIT)
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
C=.devcarry/sage
OUT=${OUT:-/tmp/kvq-attn-out}
COMMIT=${KVQ_COMMIT:-unknown}
mkdir -p "$OUT"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
rc=0
{ echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT"; stdbuf -oL timeout 150 "$C/kvq_gpu_sage_attn_test"
  echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1
grep -q "exit 0$" "$OUT/sage-attn-test.txt" || rc=1
{ echo "# gpu/sage/attn_test.cu --long on $dev; commit $COMMIT"; stdbuf -oL timeout 330 "$C/kvq_gpu_sage_attn_test" --long
  echo "kvq_gpu_sage_attn_test --long exit $?"; } > "$OUT/sage-attn-long.txt" 2>&1
grep -q "exit 0$" "$OUT/sage-attn-long.txt" || rc=1
{ timeout 60 "$C/kvq_sage_ex2_sweep" --json "$OUT/sage-ex2-sweep.json" --commit "$COMMIT"
  echo "kvq_sage_ex2_sweep exit $?"; } > "$OUT/sage-ex2-sweep.txt" 2>&1
grep -q "exit 0$" "$OUT/sage-ex2-sweep.txt" || rc=1
{ echo "# kvq verify, CUDA subject, sage standard vectors on $dev; commit $COMMIT"
  # every operation of the family (sage-dq by kvq_cuda_sage_dequantize_qk, [SAGE-DEV-18]); a skip fails
  timeout 60 "$C/kvq" verify --vectors "$C/sage-standard.vec" --subject "$C/libkvq_subject_gpu.so" \
    --ops sage-qk,sage-dq,sage-p,sage-v,sage-ds,sage-pv,sage-attn,sage-mha \
    --json "$OUT/sage-verify-gpu.json"; echo "kvq verify exit $?"; } > "$OUT/sage-verify-gpu.txt" 2>&1
grep -q "exit 0$" "$OUT/sage-verify-gpu.txt" || rc=1
{ echo "# ncu, sage_attn_kernel at nq = nk = 4096, 32 heads, INT8, buffer 128 on $dev; commit $COMMIT"
  timeout 120 ncu -k regex:sage_attn_kernel -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section ComputeWorkloadAnalysis --section WarpStateStats "$C/kvq_gpu_sage_attn_test" --bench 2>&1 |
    grep -v '^==PROF==' | tail -120; } > "$OUT/sage-attn-profile.txt" 2>&1
exit $rc
