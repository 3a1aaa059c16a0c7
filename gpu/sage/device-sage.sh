#!/bin/bash
# device-sage.sh -- the SAGE device test, FP8 conversion matrix, exhaustive FP8
# sweep and benchmark in one device call (programs built elsewhere with `make gpu`,
# carried in .devcarry/sage/: kvq_gpu_sage_test, kvq_sage_fp8_matrix,
# kvq_sage_fp8_sweep, kvq_sage_bench).
# usage: gpu/sage/device-sage.sh   (outputs under $OUT; env KVQ_COMMIT, REPS)
set -u
C=.devcarry/sage
OUT=${OUT:-/tmp/kvq-sage-out}
mkdir -p "$OUT/fp8"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
rc=0
{ echo "# gpu/reports/sage-gpu-test.txt -- gpu/sage/sage_test.cu on $dev; commit ${KVQ_COMMIT:-unknown}"
  timeout 150 "$C/kvq_gpu_sage_test"; echo "kvq_gpu_sage_test exit $?"; } > "$OUT/sage-gpu-test.txt" 2>&1
grep -q "exit 0$" "$OUT/sage-gpu-test.txt" || rc=1
timeout 45 "$C/kvq_sage_fp8_matrix" "$OUT/fp8" > "$OUT/fp8-matrix.log" 2>&1 || rc=1
timeout 60 python3 gpu/sage/fp8_matrix.py "$OUT/fp8" "$OUT/sage-fp8-matrix" "${KVQ_COMMIT:-unknown}" >> "$OUT/fp8-matrix.log" 2>&1 || rc=1
rm -f "$OUT"/fp8/*.u8 "$OUT"/fp8/*.u32
timeout 60 "$C/kvq_sage_fp8_sweep" --json "$OUT/sage-fp8-sweep.json" --commit "${KVQ_COMMIT:-unknown}" \
    > "$OUT/sage-fp8-sweep.txt" 2>&1 || rc=1
timeout 80 "$C/kvq_sage_bench" --reps "${REPS:-20}" --json "$OUT/sage-bench.json" \
    --commit "${KVQ_COMMIT:-unknown}" > "$OUT/sage-bench.txt" 2>&1 || rc=1
exit $rc
