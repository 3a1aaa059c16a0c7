#!/bin/bash
# device-quant-bw.sh -- the KIVI and SAGE quantizers' kernels of [KIVI-DEV-06] and
# [SAGE-DEV-14] on the device in one call of at most 150 s, built there from the checkout
# (they link the fast path only: no MPFR, no Check).
#
# usage: gpu/kivi/device-quant-bw.sh      (in the repository root; env KVQ_COMMIT, JOBS (16),
#        REPS (25), CASES (KVQ_GPU_CASES of the KIVI test, 1000), PLANT_CASES (400), LIMIT (148),
#        BUILD_S (120: a cold build of the kivi.cu variants took over 95 s))
#
# It builds (make; gpu/kivi/rules.mk, gpu/sage/rules.mk):
#   kvq_gpu_kivi_test (+ _alt, _x4, _plant1, _plant2, _plant3), kvq_gpu_kivi_bench (+ _old, _alt, _x4),
#   kvq_gpu_sage_qtest (+ _bfly, _plant1, _plant2), kvq_sage_qbench (+ _old, _reg, _bfly)
# runs the device tests and the planted builds side by side (correctness only: no timing
# runs meanwhile), then the benchmarks one at a time, and writes under $OUT (5 files):
#   quant-build.log    the build
#   quant-test.txt     gpu/gpu_test.cu over gpu/kivi/kivi.cu (random cases, then 3 tensors of
#                      about 2^26 values: the benchmark's size) and gpu/sage/sage_test.cu over
#                      gpu/sage/sage.cu: every output against ref/fast bit for bit (the KIVI test
#                      also over the kernels measured and not kept, _alt), every output
#                      of a failed call against its sentinel; each must end "N passed, 0
#                      failed", exit 0; then the tests over the planted builds, each must FAIL:
#                      KVQ_KIVI_PLANT 1 near ties not redone, 2 the fast path's range condition
#                      dropped, 3 the one-kernel dequantizer writing after a failed check;
#                      KVQ_SAGE_PLANT 1 near ties not redone, 2 a NaN input's error dropped
#   kivi-bench.txt     gpu/bench.cu at 256 MiB over this commit's kernels, then over those of
#                      91b3d32 (KVQ_KIVI_CHECK4=0), then over the forms measured and not kept
#                      (KVQ_KIVI_DQFUSED=1 KVQ_KIVI_INFIN=1 KVQ_KIVI_L2KEEP=1), then with the
#                      per-channel dequantizer four groups a thread (KVQ_KIVI_DQ4N=1; its device
#                      test is run too), each against a device copy in its run
#   sage-bench.txt     gpu/sage/sage_bench.cu likewise: this commit's Q/K kernel, then that of
#                      4e49489 (KVQ_SAGE_QK2=0), then this commit's with its input in registers
#                      (KVQ_SAGE_SMEM=0), then with Q's thread-granularity maxima by a
#                      reduce-scatter (KVQ_SAGE_BFLY=1; its device test is run too)
#   quant-summary.txt  the verdicts, the worst ratios, the time each stage took
# Per-program limits: tests 45 s, planted runs 35 s (the SAGE test has no case count: its
# whole run, about 17 s), benchmarks 20 s.  A stage that would not end within LIMIT is not
# started and is reported NOT RUN (a skip is never a pass: exit 1).  Exit 0 when the build,
# both tests (0 failed), every planted run (caught) and the benchmarks went as required.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-148}
OUT=${OUT:-/tmp/kvq-quant-bw-out}
COMMIT=${KVQ_COMMIT:-unknown}
B=build/gpu
[ $# -eq 0 ] || { echo "device-quant-bw: no arguments expected, got: $*" >&2; exit 2; }
mkdir -p "$OUT"
TMPJ=$(mktemp -d)
trap 'rm -rf "$TMPJ"' EXIT
dev=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
[ -n "$dev" ] || dev="a device nvidia-smi does not name"
rc=0
el() { echo $(( $(date +%s) - T0 )); }
left() { local l=$(( LIMIT - $(el) )); [ $l -lt 5 ] && l=0; echo $l; }
cap() { local l; l=$(left); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
stages=""
stage() { stages="$stages$1 at $(el) s; "; }
# run NAME SECONDS CMD...: CMD under a timeout of at most SECONDS, or NOT RUN when no time is left
run() {
    local name=$1 t; t=$(cap "$2"); shift 2
    if [ "$t" -le 0 ]; then echo "$name: NOT RUN (the ${LIMIT} s were spent)"; return 125; fi
    stdbuf -oL timeout "$t" "$@"
}

KIVI_P="kvq_gpu_kivi_test kvq_gpu_kivi_test_alt kvq_gpu_kivi_test_x4 kvq_gpu_kivi_test_plant1
        kvq_gpu_kivi_test_plant2 kvq_gpu_kivi_test_plant3 kvq_gpu_kivi_bench kvq_gpu_kivi_bench_old
        kvq_gpu_kivi_bench_alt kvq_gpu_kivi_bench_x4"
SAGE_P="kvq_gpu_sage_qtest kvq_gpu_sage_qtest_bfly kvq_gpu_sage_qtest_plant1 kvq_gpu_sage_qtest_plant2
        kvq_sage_qbench kvq_sage_qbench_old kvq_sage_qbench_reg kvq_sage_qbench_bfly"
{
    echo "# build on $dev; commit $COMMIT"
    # shellcheck disable=SC2086
    timeout "${BUILD_S:-120}" make -j"${JOBS:-16}" $(for p in $KIVI_P $SAGE_P; do echo "$B/$p"; done)
    echo "make exit $?"
    echo "# built at $(el) s"
} > "$OUT/quant-build.log" 2>&1
stage build
if ! grep -q "^make exit 0$" "$OUT/quant-build.log"; then
    echo "device-quant-bw: the build failed (see quant-build.log):"
    tail -30 "$OUT/quant-build.log"
    echo "# device-quant-bw.sh on $dev; commit $COMMIT; build FAILED; $(el) s" > "$OUT/quant-summary.txt"
    exit 1
fi

# Correctness runs, side by side (each its own log)
KVQ_GPU_CASES=${CASES:-1000} run kivi 45 "$B/kvq_gpu_kivi_test" > "$TMPJ/t-kivi.log" 2>&1 &
KVQ_GPU_CASES=${CASES:-1000} run kivi_alt 45 "$B/kvq_gpu_kivi_test_alt" > "$TMPJ/t-kivi-alt.log" 2>&1 &
KVQ_GPU_CASES=${CASES:-1000} run kivi_x4 45 "$B/kvq_gpu_kivi_test_x4" > "$TMPJ/t-kivi-x4.log" 2>&1 &
KVQ_GPU_CASES=0 KVQ_GPU_LARGE=3 KVQ_GPU_LARGE_LOG2=26 KVQ_SEED=${LARGE_SEED:-0x2} \
    run kivi_large 45 "$B/kvq_gpu_kivi_test" > "$TMPJ/t-kivi-large.log" 2>&1 &
run sage 45 "$B/kvq_gpu_sage_qtest" > "$TMPJ/t-sage.log" 2>&1 &
run sage_bfly 45 "$B/kvq_gpu_sage_qtest_bfly" > "$TMPJ/t-sage-bfly.log" 2>&1 &
for p in kivi_test_plant1 kivi_test_plant2 kivi_test_plant3 sage_qtest_plant1 sage_qtest_plant2; do
    KVQ_GPU_CASES=${PLANT_CASES:-400} run "$p" 35 "$B/kvq_gpu_$p" > "$TMPJ/p-$p.log" 2>&1 &
done
wait
stage tests
{
    echo "# quantizer device tests on $dev; commit $COMMIT"
    for t in kivi kivi-alt kivi-x4 kivi-large sage sage-bfly; do
        case $t in
        kivi) echo "# gpu/gpu_test.cu over gpu/kivi/kivi.cu (KIVI, bit for bit against ref/fast/kivi.c), KVQ_GPU_CASES=${CASES:-1000}" ;;
        kivi-alt) echo "# the same over the kernels measured and not kept (KVQ_KIVI_DQFUSED=1 KVQ_KIVI_INFIN=1 KVQ_KIVI_L2KEEP=1)" ;;
        kivi-x4) echo "# the same with the per-channel dequantizer four groups a thread (KVQ_KIVI_DQ4N=1)" ;;
        kivi-large) echo "# the same over 3 large tensors of about 2^26 values (256 MiB: the benchmark's size)" ;;
        sage) echo "# gpu/sage/sage_test.cu over gpu/sage/sage.cu (SAGE, bit for bit against ref/fast/sage.c)" ;;
        sage-bfly) echo "# the same over Q's thread-granularity maxima by a reduce-scatter (KVQ_SAGE_BFLY=1)" ;;
        esac
        tail -5 "$TMPJ/t-$t.log"
        if tail -1 "$TMPJ/t-$t.log" | grep -q " passed, 0 failed$"; then
            echo "test $t: PASSED"
        else
            echo "test $t: NOT PASSED"
            rc=1
            grep -m 3 -A 2 "^FAIL" "$TMPJ/t-$t.log" | cut -c1-300
        fi
    done
    echo "# the device tests over kernels with a planted bug; each must FAIL"
    for p in kivi_test_plant1 kivi_test_plant2 kivi_test_plant3 sage_qtest_plant1 sage_qtest_plant2; do
        last=$(tail -1 "$TMPJ/p-$p.log")
        if grep -q "^FAIL" "$TMPJ/p-$p.log" && echo "$last" | grep -q " passed, [1-9][0-9]* failed$"; then
            echo "$p: caught ($last)"
        else
            echo "$p: NOT caught ($last)"
            rc=1
        fi
        grep -m 2 -A 2 "^FAIL" "$TMPJ/p-$p.log" | cut -c1-300
    done
} > "$OUT/quant-test.txt" 2>&1

# Timing, one program at a time
{
    echo "# gpu/bench.cu over this commit's kernels"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench 20 "$B/kvq_gpu_kivi_bench" "$TMPJ/kb.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench exit $?"
    echo "# gpu/bench.cu over the kernels of 91b3d32 (KVQ_KIVI_CHECK4=0: the dequantize pre-pass one group a thread)"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench_old 20 "$B/kvq_gpu_kivi_bench_old" "$TMPJ/kbo.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench_old exit $?"
    echo "# gpu/bench.cu over the forms measured and not kept: the one-kernel dequantizer (KVQ_KIVI_DQFUSED=1), the call's end in its kernels (KVQ_KIVI_INFIN=1), the checked quantizer's scratch at evict-last (KVQ_KIVI_L2KEEP=1)"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench_alt 20 "$B/kvq_gpu_kivi_bench_alt" "$TMPJ/kbn.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench_alt exit $?"
    echo "# gpu/bench.cu over this commit's kernels with the per-channel dequantizer four groups a thread (KVQ_KIVI_DQ4N=1)"
    KVQ_BENCH_REPS=${REPS:-25} run kvq_gpu_kivi_bench_x4 20 "$B/kvq_gpu_kivi_bench_x4" "$TMPJ/kbx.json" "$COMMIT"
    echo "kvq_gpu_kivi_bench_x4 exit $?"
} > "$OUT/kivi-bench.txt" 2>&1
stage kivi-bench
[ "$(grep -c "exit 0$" "$OUT/kivi-bench.txt")" -eq 4 ] || rc=1
{
    echo "# gpu/sage/sage_bench.cu over this commit's Q/K kernel"
    run kvq_sage_qbench 20 "$B/kvq_sage_qbench" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench exit $?"
    echo "# gpu/sage/sage_bench.cu over the Q/K kernel of 4e49489 (KVQ_SAGE_QK2=0)"
    run kvq_sage_qbench_old 20 "$B/kvq_sage_qbench_old" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench_old exit $?"
    echo "# gpu/sage/sage_bench.cu over this commit's Q/K kernel with its input in registers (KVQ_SAGE_SMEM=0)"
    run kvq_sage_qbench_reg 20 "$B/kvq_sage_qbench_reg" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench_reg exit $?"
    echo "# gpu/sage/sage_bench.cu over this commit's Q/K kernel with Q's thread-granularity maxima by a reduce-scatter (KVQ_SAGE_BFLY=1)"
    run kvq_sage_qbench_bfly 20 "$B/kvq_sage_qbench_bfly" --reps "${REPS:-25}" --commit "$COMMIT"
    echo "kvq_sage_qbench_bfly exit $?"
} > "$OUT/sage-bench.txt" 2>&1
stage sage-bench
[ "$(grep -c "exit 0$" "$OUT/sage-bench.txt")" -eq 4 ] || rc=1
{
    echo "# device-quant-bw.sh on $dev; commit $COMMIT; exit $rc; $(el) s in all ($stages)"
    grep "^test \|caught\|NOT RUN" "$OUT/quant-test.txt"
    grep "^worst\|^# gpu\|NOT RUN\|exit [1-9]" "$OUT/kivi-bench.txt"
    grep "^# gpu\|^copy\|Q int\|K int\|NOT RUN\|exit [1-9]" "$OUT/sage-bench.txt"
} > "$OUT/quant-summary.txt" 2>&1
cat "$OUT/quant-summary.txt"
exit $rc
