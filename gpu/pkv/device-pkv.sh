#!/bin/bash
# device-pkv.sh -- the PKV device test, its planted-bug runs and the benchmark in one
# device call of at most 180 s of wall time, the build included: the PKV GPU programs
# link the fast path only (no MPFR, no Check), so the device's nvcc and C compiler
# build them from the checkout.
#
# usage: gpu/pkv/device-pkv.sh   (run in the repository root; outputs under $OUT)
# It runs, in this order:
#   1. make build/gpu/kvq_gpu_pkv_test build/gpu/kvq_pkv_bench gpu-pkv-plant
#      build/gpu/kvq_gpu_test build/gpu/libkvq_subject_gpu.so (at most BUILD_S seconds,
#      default 110)                                                  -> pkv-build.log
#   2. the benchmark, alone on the device (gpu/pkv/pkv_bench.cu at 256 MiB against a
#      device copy: pruned and unpruned assignment on clustered, random and tied data,
#      both dequantizer forms side by side), then, where the toolkit has cuobjdump,
#      the SASS count of the dequantizer's kernels (gpu/pkv/sass-count.py)
#                                                               -> pkv-bench.txt, pkv-bench.json
#   3. together, each bounded by the time left (the CPU side of every run is the fast
#      path; the device has room for all of them):
#      gpu/pkv/pkv_test.cu: every device output against ref/fast/pkv.c bit for bit, at
#        the default seed (CASES, default 600, and KVQ_PKV_LARGE large blocks) and at
#        EXTRA_SEEDS (0x1 0x2; EXTRA_CASES 150 cases each, no large blocks); every run must
#        end "N passed, 0 failed" with exit 0                            -> pkv-gpu-test.txt
#      the same test over kernels with one planted bug each (KVQ_PKV_PLANT = 1 .. 4,
#        gpu/pkv/pkv_dev.cuh; 3 prunes a pattern whose bound equals the best distance
#        [PKV-DEV-05], 4 lets a one-kernel dequantizer write after a failed check
#        [PKV-DEV-06]; PLANT_CASES 200 cases): each must FAIL              -> pkv-plant.txt
#      gpu/gpu_test.cu, the KIVI kernels (whose launchers share their workspace checks
#        and handling with PKV's: gpu/kvq_cuda_check.h; KVQ_GPU_CASES, default 4000):
#        "N passed, 0 failed", exit 0                 -> the end of pkv-gpu-test.txt
#      kvq verify of the CUDA subject (build/gpu/libkvq_subject_gpu.so: the PKV entries
#        are the launchers' host forms, the pruned assignment their default) on the PKV
#        standard vectors of `kvq gen` (the CLI and its MPFR/GMP libraries carried as
#        .devcarry/kvq, .devcarry/lib/): "N passed, 0 failed"         -> pkv-verify-gpu.txt
# env: KVQ_COMMIT (recorded in the reports), REPS (30), JOBS (16), BUILD_S, CASES,
#      KVQ_PKV_LARGE, EXTRA_SEEDS, EXTRA_CASES, PLANT_CASES, KVQ_GPU_CASES, BUDGET_S (180)
# Exit status 0 when the build, every test run, every planted run (caught) and the
# benchmark went as required; 1 otherwise (a run cut short by the budget counts as
# not passed, never as a pass).
set -u
start=$SECONDS
C=.devcarry
export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
budget=${BUDGET_S:-180}
OUT=${OUT:-/tmp/kvq-pkv-out}
COMMIT=${KVQ_COMMIT:-unknown}
mkdir -p "$OUT"
left() { echo $(( budget - (SECONDS - start) - ${1:-0} )); }
dev=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$dev" ] || dev="a device nvidia-smi does not name"
rc=0
{
    echo "# build of the PKV device programs on $dev; commit $COMMIT"
    timeout "${BUILD_S:-110}" make -j"${JOBS:-16}" build/gpu/kvq_gpu_pkv_test \
        build/gpu/kvq_pkv_bench gpu-pkv-plant build/gpu/kvq_gpu_test \
        build/gpu/libkvq_subject_gpu.so 2>&1 |
        grep -v "^ptxas info\|^nvcc\|^/usr/local/cuda\|^cc \|^gcc " | tail -40
    echo "make exit ${PIPESTATUS[0]}"
    echo "build wall $((SECONDS - start)) s"
} > "$OUT/pkv-build.log" 2>&1
if ! grep -q "^make exit 0$" "$OUT/pkv-build.log"; then
    echo "device-pkv: the build failed (see pkv-build.log):"
    tail -30 "$OUT/pkv-build.log"
    exit 1
fi
# 2. the benchmark, alone
t=$(left 60)
[ "$t" -gt 40 ] || t=40
timeout "$t" build/gpu/kvq_pkv_bench --reps "${REPS:-30}" --json "$OUT/pkv-bench.json" \
    --commit "$COMMIT" > "$OUT/pkv-bench.txt" 2>&1 || rc=1
if command -v cuobjdump > /dev/null 2>&1 || [ -x /usr/local/cuda/bin/cuobjdump ]; then
    PATH=$PATH:/usr/local/cuda/bin timeout 20 python3 gpu/pkv/sass-count.py build/gpu/pkv \
        >> "$OUT/pkv-bench.txt" 2>&1
else
    echo "# SASS count: no cuobjdump in this toolkit (gpu/reports/pkv-sass.txt has the local count)" \
        >> "$OUT/pkv-bench.txt"
fi
echo "# bench wall $((SECONDS - start)) s (build included)" >> "$OUT/pkv-bench.txt"
# 3. the tests, together
t=$(left 8)
[ "$t" -gt 20 ] || t=20
tdir=$(mktemp -d)
{
    echo "# gpu/pkv/pkv_test.cu on $dev; commit $COMMIT"
    KVQ_PKV_CASES=${CASES:-600} stdbuf -oL timeout "$t" build/gpu/kvq_gpu_pkv_test
    echo "kvq_gpu_pkv_test exit $?"
} > "$tdir/main.txt" 2>&1 &
i=0
for seed in ${EXTRA_SEEDS:-0x1 0x2}; do
    i=$((i + 1))
    {
        echo "# KVQ_SEED=$seed KVQ_PKV_CASES=${EXTRA_CASES:-150} KVQ_PKV_LARGE=0"
        KVQ_SEED=$seed KVQ_PKV_CASES=${EXTRA_CASES:-150} KVQ_PKV_LARGE=0 stdbuf -oL \
            timeout "$t" build/gpu/kvq_gpu_pkv_test
        echo "kvq_gpu_pkv_test exit $?"
    } > "$tdir/seed$i.txt" 2>&1 &
done
for k in 1 2 3 4; do
    KVQ_PKV_CASES=${PLANT_CASES:-200} KVQ_PKV_LARGE=0 stdbuf -oL timeout "$t" \
        "build/gpu/kvq_gpu_pkv_test_plant$k" > "$tdir/plant$k.log" 2>&1 &
    echo $! > "$tdir/plant$k.pid"
done
{
    echo "# gpu/gpu_test.cu (KIVI) on $dev; commit $COMMIT"
    KVQ_GPU_CASES=${KVQ_GPU_CASES:-4000} stdbuf -oL timeout "$t" build/gpu/kvq_gpu_test
    echo "kvq_gpu_test exit $?"
} > "$tdir/kivi.txt" 2>&1 &
{
    echo "# kvq verify of the CUDA subject on the PKV standard vectors, $dev; commit $COMMIT"
    if [ -x "$C/kvq" ]; then
        timeout 60 "$C/kvq" gen --family pkv --level standard -o "$tdir/pkv-standard.vec"
        echo "kvq gen exit $?"
        timeout "$t" "$C/kvq" verify --vectors "$tdir/pkv-standard.vec" \
            --subject build/gpu/libkvq_subject_gpu.so --max-show 5
        echo "kvq verify exit $?"
    else
        echo "no $C/kvq carried: the verification did not run"
    fi
} > "$OUT/pkv-verify-gpu.txt" 2>&1 &
# the planted runs' exit statuses, then every other job
declare -A pst
for k in 1 2 3 4; do
    wait "$(cat "$tdir/plant$k.pid")"
    pst[$k]=$?
done
wait
cat "$tdir/main.txt" "$tdir"/seed*.txt "$tdir/kivi.txt" > "$OUT/pkv-gpu-test.txt"
echo "# tests wall $((SECONDS - start)) s (build and bench included)" >> "$OUT/pkv-gpu-test.txt"
# every PKV run: exit 0 and "N passed, 0 failed"
cat "$tdir/main.txt" "$tdir"/seed*.txt > "$tdir/pkv.txt"
runs=$(grep -c "^kvq_gpu_pkv_test exit " "$tdir/pkv.txt")
[ "$(grep -c "^kvq_gpu_pkv_test exit 0$" "$tdir/pkv.txt")" -eq "$runs" ] &&
    [ "$(grep -c " passed, 0 failed$" "$tdir/pkv.txt")" -eq "$runs" ] || rc=1
grep -q "^kvq_gpu_test exit 0$" "$tdir/kivi.txt" && grep -q " passed, 0 failed$" "$tdir/kivi.txt" ||
    rc=1
grep -q "^kvq verify exit 0$" "$OUT/pkv-verify-gpu.txt" &&
    grep -Eq "^[1-9][0-9]* passed, 0 failed$" "$OUT/pkv-verify-gpu.txt" || rc=1
grep -qi "skipped" "$OUT/pkv-verify-gpu.txt" && rc=1 # a skip is never a pass
{
    echo "# gpu/pkv/pkv_test.cu over kernels with a planted bug (KVQ_PKV_PLANT); each must FAIL"
    for k in 1 2 3 4; do
        last=$(tail -1 "$tdir/plant$k.log")
        if [ "${pst[$k]}" -eq 1 ] && grep -q "FAILED, seed" "$tdir/plant$k.log"; then
            echo "plant $k: caught (exit 1; $last)"
        else
            echo "plant $k: NOT caught (exit ${pst[$k]}; $last)"
            rc=1
        fi
        grep -m 3 -A 1 "^FAIL" "$tdir/plant$k.log"
    done
} > "$OUT/pkv-plant.txt" 2>&1
rm -rf "$tdir"
grep "passed, .* failed$\|^kvq_gpu_pkv_test exit\|^kvq_gpu_test exit\|^FAIL\|wall" \
    "$OUT/pkv-gpu-test.txt" | head -24
grep "passed\|exit\|did not run" "$OUT/pkv-verify-gpu.txt"
grep "^plant" "$OUT/pkv-plant.txt"
cat "$OUT/pkv-bench.txt"
echo "device-pkv: exit $rc, $((SECONDS - start)) s"
exit $rc
