#!/bin/bash
# device-quant.sh -- the KIVI and SAGE quantizers on the device in one call of at most
# 180 s, built there from the checkout (they link the fast path only: no MPFR, no Check).
#
# usage: gpu/kivi/device-quant.sh [all|prof]   (in the repository root; env KVQ_COMMIT, JOBS
#        (16), REPS (25), CASES (KVQ_GPU_CASES of the KIVI test, 1500), PLANT_CASES (400))
#
# prof: what bounds the KIVI kernels [KIVI-DEV-05]. It builds (make gpu-quant-prof and the
# SAGE benchmark) kvq_gpu_kivi_kbench (+ _minb8, _pack8: other quantize kernels,
# gpu/kivi/rules.mk), kvq_sage_qbench, and writes under $OUT (5 files):
#   quant-build.log    the build
#   kbench.txt         gpu/kivi/kernel_bench.cu time: each kernel alone, its launcher, the
#                      floor kernels and a device copy, side by side (the three builds)
#   ncu-summary.txt    Nsight Compute, one launch of each kernel (kernel_bench once; the SAGE
#                      Q/K kernels of one kvq_sage_qbench --reps 1): sections SpeedOfLight,
#                      MemoryWorkloadAnalysis(_Tables), WarpStateStats, LaunchStats,
#                      Occupancy, SchedulerStats, a line a kernel (gpu/kivi/ncu_table.py)
#   ncu-raw.csv.gz     ncu's raw CSV of those launches (every metric of the sections)
#   quant-summary.txt  what ran, the worst ratios, the time each stage took
# Exit status 0 when the build, the timing and every ncu run went through; 1 otherwise.
#
# all (the default): the device tests, the planted bugs and the benchmarks. It builds
# (make gpu-quant-kivi gpu-quant-sage; gpu/kivi/rules.mk, gpu/sage/rules.mk: each
# program links one family's kernels, not every family's):
#   kvq_gpu_kivi_test (+ _plant1, _plant2), kvq_gpu_kivi_bench (+ _base),
#   kvq_gpu_sage_qtest (+ _plant1), kvq_sage_qbench (+ _base)
# and writes under $OUT (6 files):
#   quant-build.log    the build
#   quant-test.txt     gpu/gpu_test.cu over gpu/kivi/kivi.cu (random cases, then 3 tensors of
#                      about 2^26 values: the benchmark's size) and
#                      gpu/sage/sage_test.cu over gpu/sage/sage.cu: every output against
#                      ref/fast bit for bit; each run must end "N passed, 0 failed", exit 0
#   quant-plant.txt    the same tests over kernels with one planted bug each (KVQ_KIVI_PLANT 1:
#                      near ties not redone, 2: the fast path's range condition dropped;
#                      KVQ_SAGE_PLANT 1: near ties not redone): each must FAIL
#   kivi-bench.txt     gpu/bench.cu at 256 MiB: this commit's kernels, then the kernels of before
#                      (KVQ_KIVI_BASELINE), each against a device copy in the same run
#   sage-bench.txt     gpu/sage/sage_bench.cu likewise (KVQ_SAGE_BASELINE: the Q/K codes of before)
#   quant-summary.txt  the verdicts, the worst ratios, the time each stage took
# A stage that would not end within the 180 s is not started; it is reported as not run (a
# skip is never a pass: the exit status is then 1).
# Exit status 0 when the build, both tests (0 failed), every planted run (caught) and both
# benchmarks went as required; 1 otherwise.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-175}
OUT=${OUT:-/tmp/kvq-quant-out}
COMMIT=${KVQ_COMMIT:-unknown}
B=build/gpu
mkdir -p "$OUT"
TMPJ=$(mktemp -d)                         # the benchmarks' JSON (not returned: 6 files)
trap 'rm -rf "$TMPJ"' EXIT
dev=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$dev" ] || dev="a device nvidia-smi does not name"
rc=0
el() { echo $(( $(date +%s) - T0 )); }
# left SECONDS: the time a stage may still take (0 when under 5 s)
left() { local l=$(( LIMIT - $(el) )); [ $l -lt 5 ] && l=0; echo $l; }
# cap T: T, or what is left when that is less
cap() { local l; l=$(left); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
stages=""
stage() { stages="$stages$1 at $(el) s; "; }
MODE=${1:-all}
case "$MODE" in
all|prof) ;;
*) echo "device-quant: mode $MODE: not all or prof" >&2; exit 2 ;;
esac
if [ "$MODE" = prof ]; then
    {
        echo "# build of the profiling programs on $dev; commit $COMMIT"
        timeout 120 make -j"${JOBS:-16}" gpu-quant-prof "$B/kvq_sage_qbench"
        echo "make exit $?"
        echo "# built at $(el) s"
    } > "$OUT/quant-build.log" 2>&1
    stage build
    if ! grep -q "^make exit 0$" "$OUT/quant-build.log"; then
        echo "device-quant: the build failed (see quant-build.log):"
        tail -30 "$OUT/quant-build.log"
        exit 1
    fi
    {
        for v in "" _minb8 _pack8; do
            echo "# gpu/kivi/kernel_bench.cu time, build kvq_gpu_kivi_kbench$v"
            t=$(cap 20)
            if [ "$t" -le 0 ]; then echo "kvq_gpu_kivi_kbench$v: NOT RUN (the 180 s were spent)"; continue; fi
            KVQ_COMMIT=$COMMIT timeout "$t" "$B/kvq_gpu_kivi_kbench$v" time "${REPS:-25}"
            echo "kvq_gpu_kivi_kbench$v exit $?"
        done
    } > "$OUT/kbench.txt" 2>&1
    stage kbench
    grep -q "^kvq_gpu_kivi_kbench exit 0$" "$OUT/kbench.txt" || rc=1
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
    SECS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables
          --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats"
    # ncu_run NAME SECONDS NCUARGS -- PROGRAM ARGS: one ncu run, its log in $TMPJ/NAME.log and
    # the program's stdout (the launch names) in $TMPJ/NAME.lab; the table appended to the summary
    ncu_run() {
        local name=$1 t; t=$(cap "$2"); shift 2
        echo "# ncu $name: $*"
        if [ "$t" -le 10 ]; then echo "ncu $name: NOT RUN (the 180 s were spent)"; rc=1; return; fi
        # shellcheck disable=SC2086
        timeout "$t" "$NCU" --csv --page raw --clock-control none $SECS --log-file "$TMPJ/$name.log" "$@" \
            > "$TMPJ/$name.lab" 2> "$TMPJ/$name.err"
        local e=$?
        echo "ncu $name exit $e ($(el) s)"
        [ $e -eq 0 ] || { rc=1; tail -3 "$TMPJ/$name.err"; grep -m 3 "ERROR\|WARN" "$TMPJ/$name.log"; }
        python3 gpu/kivi/ncu_table.py "$TMPJ/$name.log" "$TMPJ/$name.lab" || rc=1
    }
    {
        echo "# Nsight Compute on $dev; commit $COMMIT; $($NCU --version 2>/dev/null | tail -1)"
        echo "# gpu/kivi/kernel_bench.cu once: one launch a kernel at 256 MiB (bench.cu's input), clocks not locked"
        if [ -z "$NCU" ]; then
            echo "device-quant: no ncu on this machine"; rc=1
        else
            ncu_run quant 45 -k regex:'kivi_' "$B/kvq_gpu_kivi_kbench" once quant launcher
            ncu_run dequant 35 -k regex:'kivi_dequant' "$B/kvq_gpu_kivi_kbench" once dequant
            ncu_run sage 25 -k regex:'sage_qk_fast' --launch-count 3 "$B/kvq_sage_qbench" --reps 1
            ncu_run floor 35 -k regex:'kq_' "$B/kvq_gpu_kivi_kbench" once floor
            ncu_run minb8 25 -k regex:'kivi_quant' "$B/kvq_gpu_kivi_kbench_minb8" once quant
            ncu_run pack8 25 -k regex:'kivi_quant' "$B/kvq_gpu_kivi_kbench_pack8" once quant
        fi
    } > "$OUT/ncu-summary.txt" 2>&1
    stage ncu
    cat "$TMPJ"/*.log 2>/dev/null | gzip -9 > "$OUT/ncu-raw.csv.gz"
    {
        echo "# device-quant.sh prof on $dev; commit $COMMIT; exit $rc; $(el) s in all ($stages)"
        grep "^copy\|^worst\|^# gpu\|exit [0-9]*$" "$OUT/kbench.txt"
        grep "^ncu .* exit\|NOT RUN\|no ncu" "$OUT/ncu-summary.txt"
    } > "$OUT/quant-summary.txt" 2>&1
    cat "$OUT/quant-summary.txt"
    exit $rc
fi
{
    echo "# build of the quantizers' device programs on $dev; commit $COMMIT"
    timeout 100 make -j"${JOBS:-16}" gpu-quant-kivi gpu-quant-sage
    echo "make exit $?"
    echo "# built at $(el) s"
} > "$OUT/quant-build.log" 2>&1
stage build
if ! grep -q "^make exit 0$" "$OUT/quant-build.log"; then
    echo "device-quant: the build failed (see quant-build.log):"
    tail -30 "$OUT/quant-build.log"
    exit 1
fi
# run NAME SECONDS CMD...: CMD under a timeout of at most SECONDS, or "not run" when no time is left
run() {
    local name=$1 t; t=$(cap "$2"); shift 2
    if [ "$t" -le 0 ]; then echo "$name: NOT RUN (the 180 s were spent)"; return 125; fi
    stdbuf -oL timeout "$t" "$@"
}
{
    echo "# quantizer device tests on $dev; commit $COMMIT"
    echo "# gpu/gpu_test.cu over gpu/kivi/kivi.cu (KIVI, bit for bit against ref/fast/kivi.c), KVQ_GPU_CASES=${CASES:-1500}"
    KVQ_GPU_CASES=${CASES:-1500} run kvq_gpu_kivi_test 60 "$B/kvq_gpu_kivi_test"
    echo "kvq_gpu_kivi_test exit $?"
    echo "# the same over 3 large tensors of about 2^26 values (256 MiB: the benchmark's size)"
    KVQ_GPU_CASES=0 KVQ_GPU_LARGE=3 KVQ_GPU_LARGE_LOG2=26 KVQ_SEED=${LARGE_SEED:-0x2} \
        run kvq_gpu_kivi_test_large 40 "$B/kvq_gpu_kivi_test"
    echo "kvq_gpu_kivi_test exit $?"
    echo "# gpu/sage/sage_test.cu over gpu/sage/sage.cu (SAGE, bit for bit against ref/fast/sage.c)"
    run kvq_gpu_sage_qtest 40 "$B/kvq_gpu_sage_qtest"
    echo "kvq_gpu_sage_qtest exit $?"
} > "$OUT/quant-test.txt" 2>&1
stage tests
for t in kvq_gpu_kivi_test kvq_gpu_sage_qtest; do
    grep -q "^$t exit 0$" "$OUT/quant-test.txt" || rc=1
done
[ "$(grep -c "^kvq_gpu_kivi_test exit 0$" "$OUT/quant-test.txt")" -eq 2 ] || rc=1
[ "$(grep -c " passed, 0 failed$" "$OUT/quant-test.txt")" -eq 3 ] || rc=1
{
    echo "# gpu/bench.cu over this commit's kernels"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench 25 "$B/kvq_gpu_kivi_bench" "$TMPJ/kivi-bench.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench exit $?"
    echo "# gpu/bench.cu over the kernels of before (KVQ_KIVI_BASELINE)"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench_base 25 "$B/kvq_gpu_kivi_bench_base" "$TMPJ/kivi-bench-base.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench_base exit $?"
} > "$OUT/kivi-bench.txt" 2>&1
stage kivi-bench
{
    echo "# gpu/sage/sage_bench.cu over this commit's Q/K codes"
    run kvq_sage_qbench 20 "$B/kvq_sage_qbench" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench exit $?"
    echo "# gpu/sage/sage_bench.cu over the Q/K codes of before (KVQ_SAGE_BASELINE)"
    run kvq_sage_qbench_base 20 "$B/kvq_sage_qbench_base" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench_base exit $?"
} > "$OUT/sage-bench.txt" 2>&1
stage sage-bench
for f in kivi-bench sage-bench; do
    [ "$(grep -c "exit 0$" "$OUT/$f.txt")" -eq 2 ] || rc=1
done
{
    echo "# the device tests over kernels with a planted bug; each must FAIL"
    for p in kivi_test_plant1 kivi_test_plant2 sage_qtest_plant1; do
        # the SAGE test takes no case count: it gets the time its whole run takes (about 17 s)
        lim=15; case $p in sage*) lim=30 ;; esac
        KVQ_GPU_CASES=${PLANT_CASES:-400} run "kvq_gpu_$p" $lim "$B/kvq_gpu_$p" > "$OUT/plant.log" 2>&1
        t=$?
        last=$(tail -1 "$OUT/plant.log")
        if [ $t -ne 0 ] && [ $t -ne 124 ] && [ $t -ne 125 ] && grep -q "^FAIL" "$OUT/plant.log"; then
            echo "$p: caught (exit $t; $last)"
        else
            echo "$p: NOT caught (exit $t; $last)"
            rc=1
        fi
        grep -m 2 -A 2 "^FAIL" "$OUT/plant.log" | cut -c1-300
    done
    rm -f "$OUT/plant.log"
} > "$OUT/quant-plant.txt" 2>&1
stage plants
{
    echo "# device-quant.sh on $dev; commit $COMMIT; exit $rc; $(el) s in all ($stages)"
    grep " passed, .* failed$\|exit [0-9]*$\|NOT RUN" "$OUT/quant-test.txt"
    grep "caught" "$OUT/quant-plant.txt"
    grep "^worst\|^# gpu\|NOT RUN\|exit [1-9]" "$OUT/kivi-bench.txt"
    grep "^# gpu\|^copy\|Q int\|K int\|NOT RUN\|exit [1-9]" "$OUT/sage-bench.txt"
} > "$OUT/quant-summary.txt" 2>&1
cat "$OUT/quant-summary.txt"
exit $rc
