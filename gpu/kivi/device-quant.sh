#!/bin/bash
# device-quant.sh -- the KIVI and SAGE quantizers on the device in one call of at most
# 180 s, built there from the checkout (they link the fast path only: no MPFR, no Check).
#
# usage: gpu/kivi/device-quant.sh [all|prof]   (in the repository root; env KVQ_COMMIT, JOBS
#        (16), REPS (25), CASES (KVQ_GPU_CASES of the KIVI test, 1500), PLANT_CASES (400))
#
# all (the default): the device tests, the planted bugs, the benchmarks and the profile of
# this commit's kernels.  It builds (make gpu-quant-kivi gpu-quant-sage gpu-quant-prof;
# gpu/kivi/rules.mk, gpu/sage/rules.mk: each program links one family's kernels):
#   kvq_gpu_kivi_test (+ _plant1, _plant2), kvq_gpu_kivi_bench (+ _base),
#   kvq_gpu_sage_qtest (+ _plant1, _plant4, _plant5), kvq_sage_qbench (+ _base),
#   kvq_gpu_kivi_kbench (+ _prev, _inl)
# and writes under $OUT (6 files):
#   quant-build.log    the build
#   quant-test.txt     gpu/gpu_test.cu over gpu/kivi/kivi.cu (random cases, then 3 tensors of
#                      about 2^26 values: the benchmark's size) and gpu/sage/sage_test.cu over
#                      gpu/sage/sage.cu: every output against ref/fast bit for bit; each run
#                      must end "N passed, 0 failed", exit 0; then the same tests over kernels
#                      with one planted bug each (KVQ_KIVI_PLANT 1: near ties not redone, 2:
#                      the fast path's range condition dropped; KVQ_SAGE_PLANT 1: near ties
#                      not redone, 4: the dequantizer's last bad scale decides, 5: its
#                      overflow decided by the scale alone): each must FAIL
#   kivi-bench.txt     gpu/bench.cu at 256 MiB: this commit's kernels, then the per-element
#                      kernels of before [KIVI-DEV-01] (KVQ_KIVI_BASELINE), each against a
#                      device copy in the same run
#   kbench.txt         gpu/kivi/kernel_bench.cu time: each KIVI kernel alone, its launcher,
#                      floor kernels and a device copy, this commit's kernels, then those of
#                      before [KIVI-DEV-05] (_prev: no register bound, rare blocks inlined,
#                      no dependent launch) and with the rare blocks inlined (_inl)
#   sage-ncu.txt       gpu/sage/sage_bench.cu likewise (KVQ_SAGE_BASELINE: the Q/K codes of
#                      before); then Nsight Compute over one launch of each of this commit's
#                      KIVI quantize and dequantize kernels at G = 32 (the pre-pass too;
#                      sections below, a line a kernel: gpu/kivi/ncu_table.py)
#   quant-summary.txt  the verdicts, the worst ratios, the time each stage took
# Exit status 0 when the build, both tests (0 failed), every planted run (caught), the
# benchmarks and the profiles went as required; 1 otherwise.
#
# prof: what bounds the kernels, more of it: the builds of kernel_bench.cu (make
# gpu-quant-prof: also at 6 and 10 blocks an SM and with the rare blocks compiled out, _hot,
# times only) and the SAGE benchmark, and under $OUT (5 files) quant-build.log,
# kbench.txt, ncu-summary.txt (Nsight Compute over the quantize kernels and the checked
# launcher's, the dequantize kernels, SAGE Q/K, the floor kernels, and the quantize kernels
# of kvq_gpu_kivi_kbench_minb6 and _minb10), ncu-raw.csv.gz (ncu's raw CSV: every metric of
# the sections) and quant-summary.txt.  Exit 0 when the build, the timing and every ncu
# run went through.
#
# Nsight Compute: ncu --section SpeedOfLight, MemoryWorkloadAnalysis(_Tables),
# WarpStateStats, LaunchStats, Occupancy, SchedulerStats; clocks not locked.  A stage that
# would not end within the 180 s is not started; it is reported as not run (a skip is never
# a pass: the exit status is then 1).
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-175}
OUT=${OUT:-/tmp/kvq-quant-out}
COMMIT=${KVQ_COMMIT:-unknown}
B=build/gpu
MODE=${1:-all}
case "$MODE" in
all|prof) ;;
*) echo "device-quant: mode $MODE: not all or prof" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
TMPJ=$(mktemp -d)                         # the benchmarks' JSON, ncu's logs (not returned)
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
# run NAME SECONDS CMD...: CMD under a timeout of at most SECONDS, or "not run" when no time is left
run() {
    local name=$1 t; t=$(cap "$2"); shift 2
    if [ "$t" -le 0 ]; then echo "$name: NOT RUN (the 180 s were spent)"; return 125; fi
    stdbuf -oL timeout "$t" "$@"
}
# build TARGET...: make under 140 s into quant-build.log; the script ends when it fails
build() {
    {
        echo "# build of the quantizers' device programs on $dev; commit $COMMIT: $*"
        timeout 140 make -j"${JOBS:-16}" "$@"
        echo "make exit $?"
        echo "# built at $(el) s"
    } > "$OUT/quant-build.log" 2>&1
    stage build
    if ! grep -q "^make exit 0$" "$OUT/quant-build.log"; then
        echo "device-quant: the build failed (see quant-build.log):"
        tail -30 "$OUT/quant-build.log"
        exit 1
    fi
}
# kbench VARIANT...: kernel_bench.cu time over each build (VARIANT "" is this commit's kernels)
kbench() {
    local v t
    for v in "$@"; do
        echo "# gpu/kivi/kernel_bench.cu time, build kvq_gpu_kivi_kbench$v"
        t=$(cap 20)
        if [ "$t" -le 0 ]; then echo "kvq_gpu_kivi_kbench$v: NOT RUN (the 180 s were spent)"; rc=1; continue; fi
        KVQ_COMMIT=$COMMIT timeout "$t" "$B/kvq_gpu_kivi_kbench$v" time "${REPS:-25}"
        local e=$?
        echo "kvq_gpu_kivi_kbench$v exit $e"
        [ $e -eq 0 ] || rc=1
    done
}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
SECS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables
      --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats"
# ncu_run NAME SECONDS NCUARGS... PROGRAM ARGS...: one ncu run, its log in $TMPJ/NAME.log and the
# program's stdout (the launch names) in $TMPJ/NAME.lab; prints the table (gpu/kivi/ncu_table.py)
ncu_run() {
    local name=$1 t; t=$(cap "$2"); shift 2
    echo "# ncu $name: $*"
    if [ -z "$NCU" ]; then echo "ncu $name: NOT RUN (no ncu on this machine)"; rc=1; return; fi
    if [ "$t" -le 10 ]; then echo "ncu $name: NOT RUN (the 180 s were spent)"; rc=1; return; fi
    # shellcheck disable=SC2086
    timeout "$t" "$NCU" --csv --page raw --clock-control none $SECS --log-file "$TMPJ/$name.log" "$@" \
        > "$TMPJ/$name.lab" 2> "$TMPJ/$name.err"
    local e=$?
    echo "ncu $name exit $e ($(el) s)"
    [ $e -eq 0 ] || { rc=1; tail -3 "$TMPJ/$name.err"; grep -m 3 "ERROR" "$TMPJ/$name.log"; }
    # instructions a value over the 2^26 values of every profiled kernel's input (2^19 x 128)
    python3 gpu/kivi/ncu_table.py "$TMPJ/$name.log" "$TMPJ/$name.lab" 67108864 || rc=1
}
ncu_head() {
    echo "# Nsight Compute on $dev; commit $COMMIT; $($NCU --version 2>/dev/null | tail -1)"
    echo "# gpu/kivi/kernel_bench.cu once: one launch a kernel at 256 MiB (bench.cu's input), clocks not locked"
}

if [ "$MODE" = prof ]; then
    build gpu-quant-prof "$B/kvq_sage_qbench"
    kbench "" _prev _inl _minb6 _minb10 _hot > "$OUT/kbench.txt" 2>&1
    stage kbench
    {
        ncu_head
        ncu_run quant 45 -k regex:'kivi_' "$B/kvq_gpu_kivi_kbench" once quant launcher
        ncu_run dequant 35 -k regex:'kivi_dequant' "$B/kvq_gpu_kivi_kbench" once dequant
        ncu_run sage 25 -k regex:'sage_qk_fast' --launch-count 3 "$B/kvq_sage_qbench" --reps 1
        ncu_run floor 35 -k regex:'kq_' "$B/kvq_gpu_kivi_kbench" once floor
        ncu_run minb6 25 -k regex:'kivi_quant' "$B/kvq_gpu_kivi_kbench_minb6" once quant
        ncu_run minb10 25 -k regex:'kivi_quant' "$B/kvq_gpu_kivi_kbench_minb10" once quant
    } > "$OUT/ncu-summary.txt" 2>&1
    stage ncu
    cat "$TMPJ"/*.log 2>/dev/null | gzip -9 > "$OUT/ncu-raw.csv.gz"
    {
        echo "# device-quant.sh prof on $dev; commit $COMMIT; exit $rc; $(el) s in all ($stages)"
        grep "^copy\|^worst\|^# gpu\|exit [0-9]*$\|NOT RUN" "$OUT/kbench.txt"
        grep "^ncu .* exit\|NOT RUN" "$OUT/ncu-summary.txt"
    } > "$OUT/quant-summary.txt" 2>&1
    cat "$OUT/quant-summary.txt"
    exit $rc
fi

build gpu-quant-kivi gpu-quant-sage "$B/kvq_gpu_kivi_kbench" "$B/kvq_gpu_kivi_kbench_prev" "$B/kvq_gpu_kivi_kbench_inl"
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
} > "$TMPJ/test.txt" 2>&1
stage tests
for t in kvq_gpu_kivi_test kvq_gpu_sage_qtest; do
    grep -q "^$t exit 0$" "$TMPJ/test.txt" || rc=1
done
[ "$(grep -c "^kvq_gpu_kivi_test exit 0$" "$TMPJ/test.txt")" -eq 2 ] || rc=1
[ "$(grep -c " passed, 0 failed$" "$TMPJ/test.txt")" -eq 3 ] || rc=1
{
    echo "# the device tests over kernels with a planted bug; each must FAIL"
    for p in kivi_test_plant1 kivi_test_plant2 sage_qtest_plant1 sage_qtest_plant4 sage_qtest_plant5; do
        # the SAGE test takes no case count: it gets the time its whole run takes (about 17 s)
        lim=15; case $p in sage*) lim=30 ;; esac
        KVQ_GPU_CASES=${PLANT_CASES:-400} run "kvq_gpu_$p" $lim "$B/kvq_gpu_$p" > "$TMPJ/plant.log" 2>&1
        t=$?
        last=$(tail -1 "$TMPJ/plant.log")
        if [ $t -ne 0 ] && [ $t -ne 124 ] && [ $t -ne 125 ] && grep -q "^FAIL" "$TMPJ/plant.log"; then
            echo "$p: caught (exit $t; $last)"
        else
            echo "$p: NOT caught (exit $t; $last)"
            rc=1
        fi
        grep -m 2 -A 2 "^FAIL" "$TMPJ/plant.log" | cut -c1-300
    done
} > "$TMPJ/plant.txt" 2>&1
stage plants
cat "$TMPJ/test.txt" "$TMPJ/plant.txt" > "$OUT/quant-test.txt"
{
    echo "# gpu/bench.cu over this commit's kernels"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench 25 "$B/kvq_gpu_kivi_bench" "$TMPJ/kivi-bench.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench exit $?"
    echo "# gpu/bench.cu over the per-element kernels of before [KIVI-DEV-01] (KVQ_KIVI_BASELINE)"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench_base 25 "$B/kvq_gpu_kivi_bench_base" "$TMPJ/kivi-bench-base.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench_base exit $?"
} > "$OUT/kivi-bench.txt" 2>&1
stage kivi-bench
[ "$(grep -c "exit 0$" "$OUT/kivi-bench.txt")" -eq 2 ] || rc=1
kbench "" _prev _inl > "$OUT/kbench.txt" 2>&1
stage kbench
{
    echo "# gpu/sage/sage_bench.cu over this commit's Q/K codes"
    run kvq_sage_qbench 20 "$B/kvq_sage_qbench" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench exit $?"
    echo "# gpu/sage/sage_bench.cu over the Q/K codes of before (KVQ_SAGE_BASELINE)"
    run kvq_sage_qbench_base 20 "$B/kvq_sage_qbench_base" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench_base exit $?"
} > "$TMPJ/sage.txt" 2>&1
stage sage-bench
[ "$(grep -c "exit 0$" "$TMPJ/sage.txt")" -eq 2 ] || rc=1
{
    cat "$TMPJ/sage.txt"
    ncu_head
    # the G = 32 configurations (bits 2, 4, 8; per channel, per token): the first 6 launches
    ncu_run quant 25 -k regex:'kivi_quant' --launch-count 6 "$B/kvq_gpu_kivi_kbench" once quant
    ncu_run dequant 20 -k regex:'kivi_dequant' --launch-count 7 "$B/kvq_gpu_kivi_kbench" once dequant
} > "$OUT/sage-ncu.txt" 2>&1
stage ncu
{
    echo "# device-quant.sh on $dev; commit $COMMIT; exit $rc; $(el) s in all ($stages)"
    grep " passed, .* failed$\|exit [0-9]*$\|NOT RUN" "$TMPJ/test.txt"
    grep "caught" "$TMPJ/plant.txt"
    grep "^worst\|^# gpu\|NOT RUN\|exit [1-9]" "$OUT/kivi-bench.txt"
    grep "^copy\|^worst\|^# gpu\|exit [0-9]*$\|NOT RUN" "$OUT/kbench.txt"
    grep "^# gpu\|^copy\|Q int\|K int\|NOT RUN\|exit [1-9]\|^ncu .* exit" "$OUT/sage-ncu.txt"
} > "$OUT/quant-summary.txt" 2>&1
cat "$OUT/quant-summary.txt"
exit $rc
