#!/bin/bash
# device-pkv.sh -- the PKV device test, its planted-bug runs and the benchmark in one
# device call, built there: the PKV GPU programs link the fast path only (no MPFR, no
# Check), so the device's nvcc and C compiler build them from the checkout
# (`make build/gpu/kvq_gpu_pkv_test build/gpu/kvq_pkv_bench gpu-pkv-plant`).
#
# usage: gpu/pkv/device-pkv.sh   (run in the repository root; outputs under $OUT)
#   pkv-build.log    the build
#   pkv-gpu-test.txt gpu/pkv/pkv_test.cu: every device output against ref/fast/pkv.c, bit
#                    for bit, at the default seed and at EXTRA_SEEDS (0x1 0x2, EXTRA_CASES
#                    150 cases each); every run must end "N passed, 0 failed" with exit 0
#   kivi-gpu-test.txt gpu/gpu_test.cu, the KIVI kernels (their device arithmetic is shared
#                    with PKV through gpu/kivi/kivi_dev.cuh): "N passed, 0 failed", exit 0
#   pkv-plant.txt    the same test over kernels with one planted bug each
#                    (KVQ_PKV_PLANT = 1 .. 4; gpu/pkv/pkv_dev.cuh; 3 prunes a pattern whose
#                    bound equals the best distance [PKV-DEV-05], 4 lets the one-kernel
#                    dequantizer write after a failed check [PKV-DEV-06]): each must FAIL
#   pkv-bench.txt, pkv-bench.json   gpu/pkv/pkv_bench.cu at 256 MiB against a device copy
#                    (the pruned rows on clustered, random and tied data; ops/elem of those
#                    from the host model of the pruning's visits)
# env: KVQ_COMMIT (recorded in the reports), REPS (30), JOBS (16), KVQ_SEED, KVQ_PKV_CASES,
#      KVQ_PKV_LARGE (passed to the first test run), EXTRA_SEEDS, EXTRA_CASES, PLANT_CASES
#      (200: the planted runs' random cases, no large blocks)
# Exit status 0 when the build, the test, both planted runs (caught) and the benchmark
# went as required; 1 otherwise.
set -u
OUT=${OUT:-/tmp/kvq-pkv-out}
COMMIT=${KVQ_COMMIT:-unknown}
mkdir -p "$OUT"
dev=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$dev" ] || dev="a device nvidia-smi does not name"
rc=0
{
    echo "# build of the PKV device programs on $dev; commit $COMMIT"
    make -j"${JOBS:-16}" build/gpu/kvq_gpu_pkv_test build/gpu/kvq_pkv_bench gpu-pkv-plant \
        build/gpu/kvq_gpu_test
    echo "make exit $?"
} > "$OUT/pkv-build.log" 2>&1
if ! grep -q "^make exit 0$" "$OUT/pkv-build.log"; then
    echo "device-pkv: the build failed (see pkv-build.log):"
    tail -30 "$OUT/pkv-build.log"
    exit 1
fi
{
    echo "# gpu/reports/pkv-gpu-test.txt -- gpu/pkv/pkv_test.cu on $dev; commit $COMMIT"
    stdbuf -oL timeout 240 build/gpu/kvq_gpu_pkv_test
    echo "kvq_gpu_pkv_test exit $?"
    # more seeds, shorter runs (no large blocks): the pruned assignment's inputs
    # [PKV-DEV-05] (random, clustered, ties, near ties) drawn anew each time
    for seed in ${EXTRA_SEEDS:-0x1 0x2}; do
        echo "# KVQ_SEED=$seed KVQ_PKV_CASES=${EXTRA_CASES:-150} KVQ_PKV_LARGE=0"
        KVQ_SEED=$seed KVQ_PKV_CASES=${EXTRA_CASES:-150} KVQ_PKV_LARGE=0 stdbuf -oL timeout 90 \
            build/gpu/kvq_gpu_pkv_test
        echo "kvq_gpu_pkv_test exit $?"
    done
} > "$OUT/pkv-gpu-test.txt" 2>&1
# every run: exit 0 and "N passed, 0 failed"
runs=$(grep -c "^kvq_gpu_pkv_test exit " "$OUT/pkv-gpu-test.txt")
[ "$(grep -c "^kvq_gpu_pkv_test exit 0$" "$OUT/pkv-gpu-test.txt")" -eq "$runs" ] &&
    [ "$(grep -c " passed, 0 failed$" "$OUT/pkv-gpu-test.txt")" -eq "$runs" ] || rc=1
{
    echo "# gpu/gpu_test.cu (KIVI, whose device arithmetic gpu/kivi/kivi_dev.cuh now shares with PKV) on $dev; commit $COMMIT"
    stdbuf -oL timeout 120 build/gpu/kvq_gpu_test
    echo "kvq_gpu_test exit $?"
} > "$OUT/kivi-gpu-test.txt" 2>&1
grep -q "^kvq_gpu_test exit 0$" "$OUT/kivi-gpu-test.txt" && grep -q " passed, 0 failed$" "$OUT/kivi-gpu-test.txt" || rc=1
{
    echo "# gpu/pkv/pkv_test.cu over kernels with a planted bug (KVQ_PKV_PLANT); each must FAIL"
    for k in 1 2 3 4; do
        KVQ_PKV_CASES=${PLANT_CASES:-200} KVQ_PKV_LARGE=0 stdbuf -oL timeout 120 \
            "build/gpu/kvq_gpu_pkv_test_plant$k" > "$OUT/plant$k.log" 2>&1
        t=$?
        last=$(tail -1 "$OUT/plant$k.log")
        if [ $t -eq 1 ] && grep -q "FAILED, seed" "$OUT/plant$k.log"; then
            echo "plant $k: caught (exit 1; $last)"
        else
            echo "plant $k: NOT caught (exit $t; $last)"
            rc=1
        fi
        grep -m 3 -A 1 "^FAIL" "$OUT/plant$k.log"
        rm -f "$OUT/plant$k.log"
    done
} > "$OUT/pkv-plant.txt" 2>&1
timeout 150 build/gpu/kvq_pkv_bench --reps "${REPS:-30}" --json "$OUT/pkv-bench.json" \
    --commit "$COMMIT" > "$OUT/pkv-bench.txt" 2>&1 || rc=1
grep "passed, .* failed$\|^kvq_gpu_pkv_test exit\|^FAIL" "$OUT/pkv-gpu-test.txt" | head -20
tail -2 "$OUT/kivi-gpu-test.txt"
grep "^plant" "$OUT/pkv-plant.txt"
cat "$OUT/pkv-bench.txt"
exit $rc
