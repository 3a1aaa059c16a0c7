#!/bin/bash
# device-stg.sh -- the SAGE pipeline's stage kernels outside the core (spec/sage.md
# [SAGE-DEV-16]: smoothing's mean by cp.async token tiles with the input check inside it, its
# subtraction by float4, dS tiled in shared memory, the Q/K quantizers in their direct form),
# judged and timed in one device call within 150 s:
#   - carried from a build at this commit (stamp build/gpu/carried.commit), MPFR-linked:
#     build/gpu/kvq_gpu_sage_attn_test and build/gpu/kvq_gpu_sage_attn_test_plant (the same
#     test over the planted stage kernels); carried too when stamped, else built here (make
#     -j16, no MPFR): the stage test build/gpu/kvq_gpu_sage_qtest and its planted build
#     kvq_gpu_sage_qtest_stgplant,
#   - from the start, in the background, the attention device test (the default pipeline:
#     the stage kernels): every intermediate byte for byte against ref/fast, the traced core,
#     every output within the bound, the error cases and their stage order; at most ATT_S
#     (default 100) s (a timeout reads as such),
#   - meanwhile: the build, the stage test (smoothing and dS, one call each, against ref/fast
#     bit for bit, over the stage kernels) and its planted build twice (KVQ_SAGE_STG_PLANT=1:
#     tokens 1 and 2 of each mean summed in swapped order; =2: dS's last two channels
#     swapped), both at once: each must FAIL; then the planted attention test, both plants, at most 10 s
#     each: each must FAIL (a FAIL line on the means or dS),
#   - then, alone on the device: kvq_gpu_sage_attn_test --stages SIZES REPS (default
#     4096,8192,32768 and 5): the stage kernels against those of before (KVQ_SAGE_STAGES=0)
#     at 32 heads, not causal: every workspace and output byte equal, the stage split of
#     both, each stage's copy of its bytes, dS without its load overlap (KVQ_SAGE_DS_SPLIT=0),
#     the whole pipeline, medians.
# Writes under $OUT: summary.txt, sage-attn-test.txt, sage-test.txt, attn-plant.txt,
# stages.txt, build.log.
# usage: gpu/sage/device-stg.sh [SIZES [REPS]]   (env OUT, KVQ_COMMIT, ATT_S)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-stg-out}
COMMIT=${KVQ_COMMIT:-unknown}
SIZES=${1:-4096,8192,32768}
REPS=${2:-5}
ATT_S=${ATT_S:-100}
B=build/gpu
mkdir -p "$OUT"
TAG=device-stg
. gpu/sage/device-lib.sh    # say, el, stamped
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
say "device $dev, commit $COMMIT, nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"
export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset KVQ_SAGE_STAGES KVQ_SAGE_STG_PLANT KVQ_SAGE_DS_SPLIT KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL KVQ_SAGE_VT
rc=0
carried=1
for f in $B/kvq_gpu_sage_attn_test $B/kvq_gpu_sage_attn_test_plant; do
    stamped "$f" || { say "error: $f not carried at $COMMIT"; carried=0; rc=1; }
done
ATT=
if [ "$carried" = 1 ]; then
    ( export OMP_NUM_THREADS=12
      { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the pipeline with the stage kernels of [SAGE-DEV-16], the default core); at most $ATT_S s"
        stdbuf -oL timeout "$ATT_S" $B/kvq_gpu_sage_attn_test
        echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1 ) &
    ATT=$!
fi
# the stage test and its planted build: carried when stamped, else built here
need=
for f in $B/kvq_gpu_sage_qtest $B/kvq_gpu_sage_qtest_stgplant; do stamped "$f" || need="$need $f"; done
if [ -z "$need" ] || { rm -f $need; make -j16 $need > "$OUT/build.log" 2>&1; }; then
    [ -z "$need" ] && say "stage tests carried, built at $(cat $B/carried.commit)" || say "stage tests built here at $(el) s:$need"
    T=$(mktemp -d)
    { echo "# gpu/sage/sage_test.cu over this commit's kernels (the stage kernels, the default) on $dev; commit $COMMIT"
      stdbuf -oL timeout 40 $B/kvq_gpu_sage_qtest; echo "kvq_gpu_sage_qtest exit $?"; } > "$OUT/sage-test.txt" 2>&1
    ok=$(grep -cE "^[0-9]+ passed, 0 failed$" "$OUT/sage-test.txt")
    if [ "$ok" = 1 ] && grep -q "kvq_gpu_sage_qtest exit 0$" "$OUT/sage-test.txt"; then
        say "stage test: $(grep -E 'passed, [0-9]+ failed' "$OUT/sage-test.txt")"
    else
        say "error: stage test: $(grep -E 'passed, [0-9]+ failed|SKIPPED' "$OUT/sage-test.txt" | tr '\n' ' ') $(grep 'qtest exit' "$OUT/sage-test.txt")"
        rc=1
    fi
    caught=0
    pids=
    for p in 1 2; do       # both at once, fewer random cases (KVQ_SAGE_GROUPS, KVQ_SAGE_DS_CASES)
        ( KVQ_SAGE_STG_PLANT=$p KVQ_SAGE_GROUPS=20000 KVQ_SAGE_DS_CASES=200 timeout 40 \
              $B/kvq_gpu_sage_qtest_stgplant > "$T/plant$p.txt" 2>&1; echo $? > "$T/rc$p" ) &
        pids="$pids $!"
    done
    wait $pids
    for p in 1 2; do
        prc=$(cat "$T/rc$p" 2>/dev/null)
        { echo "# the planted build, KVQ_SAGE_STG_PLANT=$p ($([ $p = 1 ] && echo "the mean's tokens 1 and 2 swapped" || echo "dS's last two channels swapped")): must FAIL; exit $prc; its first FAIL lines and its closing lines:"
          grep -E "^ *FAIL" "$T/plant$p.txt" | head -3
          tail -3 "$T/plant$p.txt"; } >> "$OUT/sage-test.txt"
        grep -qE "^[0-9]+ passed, [1-9][0-9]* failed$" "$T/plant$p.txt" && caught=$((caught + 1))
    done
    rm -rf "$T"
    [ "$caught" = 2 ] && say "planted stage test: both plants FAIL, as they must" ||
        { say "error: planted stage test: $caught of 2 plants caught"; rc=1; }
else
    say "error: the build failed (build.log)"
    tail -20 "$OUT/build.log"
    rc=1
fi
if [ "$carried" = 1 ]; then
    : > "$OUT/attn-plant.txt"
    for p in 1 2; do
        { echo "# kvq_gpu_sage_attn_test over the planted stage kernels, KVQ_SAGE_STG_PLANT=$p: must FAIL; at most 10 s"
          KVQ_SAGE_STG_PLANT=$p OMP_NUM_THREADS=4 stdbuf -oL timeout 10 $B/kvq_gpu_sage_attn_test_plant 2>&1 | head -40
          echo "plant $p done"; } >> "$OUT/attn-plant.txt"
    done
    c1=$(sed -n '/STG_PLANT=1/,/plant 1 done/p' "$OUT/attn-plant.txt" | grep -cE "FAIL .*(K means|Q means|smoothed)")
    c2=$(sed -n '/STG_PLANT=2/,/plant 2 done/p' "$OUT/attn-plant.txt" | grep -cE "FAIL .*dS")
    [ "$c1" -gt 0 ] && [ "$c2" -gt 0 ] && say "planted attention test: the means plant FAILS ($c1 FAIL lines on the means), the dS plant FAILS ($c2 on dS), as they must" ||
        { say "error: planted attention test: $c1 FAIL lines on the means (plant 1), $c2 on dS (plant 2)"; rc=1; }
    wait "$ATT"
    say "attention device test (to $(el) s): $(grep -cE '^  case' "$OUT/sage-attn-test.txt") cases reported, $(tail -2 "$OUT/sage-attn-test.txt" | tr '\n' ' ')"
    grep -E "^ *FAIL" "$OUT/sage-attn-test.txt" | head -6 >> "$OUT/summary.txt"
    grep -q "exit 0$" "$OUT/sage-attn-test.txt" && grep -q " 0 failed" "$OUT/sage-attn-test.txt" || rc=1
    # the timing, alone on the device
    left=$(( 147 - $(el) ))
    [ "$left" -gt 5 ] || left=5
    { stdbuf -oL timeout "$left" $B/kvq_gpu_sage_attn_test --stages "$SIZES" "$REPS"
      echo "kvq_gpu_sage_attn_test --stages exit $?"; } > "$OUT/stages.txt" 2>&1
    grep -q "stages exit 0$" "$OUT/stages.txt" || rc=1
    grep -E "^stages N=.*differ|^pipeline|outside the core|stages exit" "$OUT/stages.txt" >> "$OUT/summary.txt"
fi
say "finished in $(el) s, exit $rc"
exit $rc
