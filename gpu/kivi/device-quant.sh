#!/bin/bash
# device-quant.sh -- the KIVI and SAGE quantizers on the device in one call of at most
# 180 s, built there from the checkout (they link the fast path only: no MPFR, no Check):
#   make build/gpu/kvq_gpu_kivi_test (+ _plant1, _plant2) kvq_gpu_kivi_bench (+ _base)
#        kvq_gpu_sage_qtest (+ _plant1) kvq_sage_qbench (+ _base)   (gpu/kivi/rules.mk,
#        gpu/sage/rules.mk: each links the one family's kernels, not every family's)
# then, under $OUT (6 files):
#   quant-build.log  the build, and the static SASS instruction counts of the kernels when
#                    the device has cuobjdump (gpu/kivi/sass-count.sh)
#   quant-test.txt   gpu/gpu_test.cu over gpu/kivi/kivi.cu and gpu/sage/sage_test.cu over
#                    gpu/sage/sage.cu: every output against ref/fast bit for bit; each run
#                    must end "N passed, 0 failed", exit 0
#   quant-plant.txt  the same tests over kernels with one planted bug each (KVQ_KIVI_PLANT 1, 2:
#                    near ties not redone, the fast path's range condition dropped;
#                    KVQ_SAGE_PLANT 1: near ties not redone): each must FAIL
#   kivi-bench.txt   gpu/bench.cu at 256 MiB: the kernels of this commit, then the per-element
#                    kernels of before (KVQ_KIVI_BASELINE), each against a device copy in the
#                    same run (ratio = bandwidth / copy bandwidth, medians)
#   sage-bench.txt   gpu/sage/sage_bench.cu likewise, this commit's Q/K codes, then before's
#   quant-summary.txt  the verdicts and the worst ratios
# usage: gpu/kivi/device-quant.sh   (in the repository root; env KVQ_COMMIT, JOBS (16),
#        REPS (25), KVQ_GPU_CASES (the test's default), PLANT_CASES (600))
# Exit status 0 when the build, both tests (0 failed) and every planted run (caught) went as
# required and both benchmarks ran; 1 otherwise.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-quant-out}
COMMIT=${KVQ_COMMIT:-unknown}
B=build/gpu
mkdir -p "$OUT"
dev=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$dev" ] || dev="a device nvidia-smi does not name"
rc=0
el() { echo "$(( $(date +%s) - T0 )) s"; }
{
    echo "# build of the quantizers' device programs on $dev; commit $COMMIT"
    make -j"${JOBS:-16}" gpu-quant-kivi gpu-quant-sage
    echo "make exit $?"
    echo "# built at $(el)"
} > "$OUT/quant-build.log" 2>&1
if ! grep -q "^make exit 0$" "$OUT/quant-build.log"; then
    echo "device-quant: the build failed (see quant-build.log):"
    tail -30 "$OUT/quant-build.log"
    exit 1
fi
if command -v cuobjdump >/dev/null 2>&1 && [ -f gpu/kivi/sass-count.sh ]; then
    timeout 20 bash gpu/kivi/sass-count.sh "$B/kivi/kivi.o" "$B/kivi/kivi_base.o" "$B/sage/sage.o" \
        "$B/sage/sage_base.o" >> "$OUT/quant-build.log" 2>&1
fi
{
    echo "# quantizer device tests on $dev; commit $COMMIT"
    echo "# gpu/gpu_test.cu over gpu/kivi/kivi.cu (KIVI, bit for bit against ref/fast/kivi.c)"
    stdbuf -oL timeout 60 "$B/kvq_gpu_kivi_test"
    echo "kvq_gpu_kivi_test exit $?"
    echo "# gpu/sage/sage_test.cu over gpu/sage/sage.cu (SAGE, bit for bit against ref/fast/sage.c)"
    stdbuf -oL timeout 40 "$B/kvq_gpu_sage_qtest"
    echo "kvq_gpu_sage_qtest exit $?"
    echo "# done at $(el)"
} > "$OUT/quant-test.txt" 2>&1
for t in kvq_gpu_kivi_test kvq_gpu_sage_qtest; do
    grep -q "^$t exit 0$" "$OUT/quant-test.txt" || rc=1
done
[ "$(grep -c " passed, 0 failed$" "$OUT/quant-test.txt")" -eq 2 ] || rc=1
{
    echo "# the device tests over kernels with a planted bug; each must FAIL"
    for p in kivi_test_plant1 kivi_test_plant2 sage_qtest_plant1; do
        KVQ_GPU_CASES=${PLANT_CASES:-600} stdbuf -oL timeout 25 "$B/kvq_gpu_$p" > "$OUT/plant.log" 2>&1
        t=$?
        last=$(tail -1 "$OUT/plant.log")
        if [ $t -ne 0 ] && [ $t -ne 124 ] && grep -q "^FAIL" "$OUT/plant.log"; then
            echo "$p: caught (exit $t; $last)"
        else
            echo "$p: NOT caught (exit $t; $last)"
            rc=1
        fi
        grep -m 2 -A 2 "^FAIL" "$OUT/plant.log" | cut -c1-300
    done
    rm -f "$OUT/plant.log"
    echo "# done at $(el)"
} > "$OUT/quant-plant.txt" 2>&1
{
    echo "# gpu/bench.cu over this commit's kernels"
    KVQ_BENCH_REPS=${REPS:-25} timeout 30 "$B/kvq_gpu_kivi_bench" "" "$COMMIT" || echo "kvq_gpu_kivi_bench exit $?"
    echo "# gpu/bench.cu over the per-element kernels of before (KVQ_KIVI_BASELINE)"
    KVQ_BENCH_REPS=${REPS:-25} timeout 30 "$B/kvq_gpu_kivi_bench_base" "" "$COMMIT" || echo "kvq_gpu_kivi_bench_base exit $?"
    echo "# done at $(el)"
} > "$OUT/kivi-bench.txt" 2>&1
grep -q "exit [0-9]*$" "$OUT/kivi-bench.txt" && rc=1
{
    echo "# gpu/sage/sage_bench.cu over this commit's Q/K codes"
    timeout 25 "$B/kvq_sage_qbench" --reps "${REPS:-25}" --commit "$COMMIT" || echo "kvq_sage_qbench exit $?"
    echo "# gpu/sage/sage_bench.cu over the Q/K codes of before (KVQ_SAGE_BASELINE)"
    timeout 25 "$B/kvq_sage_qbench_base" --reps "${REPS:-25}" --commit "$COMMIT" || echo "kvq_sage_qbench_base exit $?"
    echo "# done at $(el)"
} > "$OUT/sage-bench.txt" 2>&1
grep -q "exit [0-9]*$" "$OUT/sage-bench.txt" && rc=1
{
    echo "# device-quant.sh on $dev; commit $COMMIT; exit $rc; $(el) in all"
    grep " passed, .* failed$\|exit [0-9]*$" "$OUT/quant-test.txt"
    grep "caught" "$OUT/quant-plant.txt"
    grep "^worst\|^# gpu" "$OUT/kivi-bench.txt"
    grep "ratio\|^# gpu" "$OUT/sage-bench.txt" | grep "^#\|Q int\|K int"
} > "$OUT/quant-summary.txt" 2>&1
cat "$OUT/quant-summary.txt"
exit $rc
