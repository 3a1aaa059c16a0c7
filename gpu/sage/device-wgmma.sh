#!/bin/bash
# device-wgmma.sh -- Hopper's wgmma through CuTe in one device call, within 180 s
# including the build: builds ONLY build/gpu/kvq_sage_wgmma_probe and
# build/gpu/kvq_sage_qk_test (no MPFR; the CUTLASS/CuTe headers unpacked from the carried
# wheel nvidia_cutlass-4.2.0.0, found as build/deps/*.whl, anywhere under .devcarry/, or
# $CUTLASS_WHEEL; or the Python package cutlass_library if installed), then runs
#   - the probe with a planted bug (--plant: every path must FAIL), then the probe (FP8
#     E4M3/E5M2 -> f32 against kvq's accumulator models, INT8 -> s32 against the exact
#     sum; every output judged on the device) in the time left but 45 s,
#   - the QK stage test (the CuTe TMA + INT8 wgmma QK against the current QK loop and the
#     host, bit for bit, and the two timed side by side; both forms, the one-accumulator
#     kernel and --pp) and its planted bug (must FAIL),
# and writes under $OUT: summary.txt (which model matches, mismatch counts, one line a
# path; the QK verdicts and speed ratio), wgmma-probe.txt (the full report),
# wgmma-probe.json, wgmma-plant.txt, qk-test.txt and build.log.
# usage: gpu/sage/device-wgmma.sh [OUTPUTS]   (outputs a path and distribution, default
#        262144; env OUT, KVQ_COMMIT)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-wgmma-out}
COMMIT=${KVQ_COMMIT:-unknown}
OUTPUTS=${1:-262144}
mkdir -p "$OUT"
WHL_NAME=nvidia_cutlass-4.2.0.0-py3-none-any.whl
say() { echo "device-wgmma: $*" | tee -a "$OUT/summary.txt"; }
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
say "device $dev, commit $COMMIT, nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"

. gpu/sage/cutlass-inc.sh
kvq_cutlass_inc || exit 2
if ! make -j16 CUTLASS_INC="$inc" build/gpu/kvq_sage_wgmma_probe build/gpu/kvq_sage_qk_test > "$OUT/build.log" 2>&1; then
    say "error: the build failed (build.log)"
    tail -20 "$OUT/build.log"
    exit 2
fi
say "built in $(( $(date +%s) - T0 )) s"
# the planted bug first (one output bit flipped a distribution): every path must FAIL
{ stdbuf -oL timeout 30 build/gpu/kvq_sage_wgmma_probe --outputs 16384 --plant --commit "$COMMIT"
  echo "kvq_sage_wgmma_probe --plant exit $?"; } > "$OUT/wgmma-plant.txt" 2>&1
np=$(grep -cE "^[a-z0-9]+ m64n[^:]*: (PASS|FAILED)" "$OUT/wgmma-plant.txt")
nf=$(grep -cE "^[a-z0-9]+ m64n[^:]*: FAILED \(" "$OUT/wgmma-plant.txt")
if grep -q "plant exit 1$" "$OUT/wgmma-plant.txt" && [ "$np" -gt 0 ] && [ "$nf" -eq "$np" ]; then
    say "planted bug: all $nf paths FAILED, as they must"
else
    say "error: planted bug: $nf of $np paths FAILED ($(tail -1 "$OUT/wgmma-plant.txt")): the judge is blind"
    plant_bad=1
fi
# the probe first (the question that decides the design), 45 s kept for the QK stage
left=$(( 170 - 45 - ($(date +%s) - T0) ))
[ "$left" -gt 20 ] || left=20
{ stdbuf -oL timeout "$left" build/gpu/kvq_sage_wgmma_probe --outputs "$OUTPUTS" --commit "$COMMIT" \
      --json "$OUT/wgmma-probe.json"
  echo "kvq_sage_wgmma_probe exit $?"; } > "$OUT/wgmma-probe.txt" 2>&1
# the QK stage: the check and the timing, then the planted bug (must FAIL the check)
# (the one-accumulator kernel, then --pp: two accumulators, one block's wgmma in flight
# while the other's scores are computed)
{ for v in "" --pp; do
      stdbuf -oL timeout 12 build/gpu/kvq_sage_qk_test $v --commit "$COMMIT"; echo "kvq_sage_qk_test ${v:+$v }exit $?"
      stdbuf -oL timeout 8 build/gpu/kvq_sage_qk_test $v --plant --commit "$COMMIT"
      echo "kvq_sage_qk_test ${v:+$v }--plant exit $?"
  done
} > "$OUT/qk-test.txt" 2>&1
grep -E "^qk-test|exit [0-9]+$" "$OUT/qk-test.txt" >> "$OUT/summary.txt"
for v in "" "--pp "; do
    grep -q "^kvq_sage_qk_test ${v}exit 0$" "$OUT/qk-test.txt" || qk_bad=1
    grep -q "^kvq_sage_qk_test ${v}--plant exit 0$" "$OUT/qk-test.txt" || qk_bad=1
done
rc=0
grep -q "exit 0$" "$OUT/wgmma-probe.txt" || rc=1
[ "${plant_bad:-0}" -eq 0 ] || rc=1
[ "${qk_bad:-0}" -eq 0 ] || rc=1
grep -E "^# wgmma-probe|: (PASS|FAILED)|: best model|exit [0-9]+$|SKIPPED" "$OUT/wgmma-probe.txt" >> "$OUT/summary.txt"
say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
exit $rc
