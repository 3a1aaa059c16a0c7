#!/bin/bash
# device-vt.sh -- V~, V's codes written by the V quantizer in the FA3 core's B-operand layout
# (spec/sage.md [SAGE-DEV-15]), judged and timed in one device call within 150 s:
#   - the programs carried from a build at this commit (stamp build/gpu/carried.commit:
#     build/gpu/kvq_sage_fa3_test, build/gpu/kvq_sage_fa3_test_plant and the MPFR-linked
#     build/gpu/kvq_gpu_sage_attn_test), else the first two built here (make -j16, the
#     CUTLASS/CuTe headers from the carried wheel; the attention test is then not run),
#   - from the start, under the checks (none of them timed), the attention device test
#     kvq_gpu_sage_attn_test with the default core (FA3 at its default level, given V~): every
#     intermediate and V~ byte for byte against ref/fast, the traced warpgroup core, every
#     output within the bound; at most ATT_S (default 112) s (a timeout reads as such),
#   - the planted build (the core's flush after block 0 skipped, the V quantizer's V~ with
#     two quarters of each tile swapped): its check must FAIL, both plants,
#   - the check of ping-pong level 3 (--forms 3): every output of the core given V~
#     and not, on 12 shapes, against the warpgroup core bit for bit; the pipeline's V~ byte
#     for byte against its plain codes permuted; its outputs with V~, KVQ_SAGE_VT=0 and
#     the warpgroup core equal,
#   - then, alone on the device: the warpgroup core, level 3 and level 3 given V~ side by
#     side (N = SIZES, default 8192,32768, causal and not, 32 heads, medians of REPS = 5,
#     a copy of the input bytes), and the whole pipeline with and without V~ (its V
#     quantizer's and core's times, a copy of V's bytes),
#   - in what is left (at most 25 s, ncu present): ncu of level 3 without and with V~ at
#     N = 8192 (duration, issue slots, eligible warps, shared-memory bank conflicts).
# Writes under $OUT: summary.txt, fa3-test.txt, fa3-plant.txt, sage-attn-test.txt,
# vt-profile.txt, build.log (only when something was built).
# With `attn` first: only the attention device test, at most 140 s.
# With `bench` first: the attention benchmark (gpu/sage/device-attn-bench.sh on
# build/gpu/libkvq_sage_attn.so, carried and stamped, else built here) in the time left:
# torch SDPA flash/cuDNN/efficient, SageAttention 1 and kvq's pipeline with V~ (the default)
# and, in the first group (batch 1, 32 KV heads), without (KVQ_SAGE_VT=0); batch 1 and 4, 32
# and 8 KV heads, N = SIZES (default 4096..32768 here) causal and not, then LONG (default
# 65536,131072) non-causal at batch 1; 5 reps, accuracy on 32 rows a head; before it, when
# carried, the planted build and the check of the default form as above (a few s); writes
# sage-attn-bench.{txt,json}, fa3-test.txt, summary.txt (build.log when built; the log's tail
# and the device's name go to summary.txt).
# usage: gpu/sage/device-vt.sh [attn|bench] [SIZES]   (env OUT, KVQ_COMMIT, ATT_S, REPS, LONG)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-vt-out}
COMMIT=${KVQ_COMMIT:-unknown}
MODE=all
case "${1:-}" in attn|bench) MODE=$1; shift ;; esac
if [ "$MODE" = bench ]; then SIZES=${1:-4096,8192,16384,32768}; else SIZES=${1:-8192,32768}; fi
mkdir -p "$OUT"
WHL_NAME=nvidia_cutlass-4.2.0.0-py3-none-any.whl
TAG=device-vt
. gpu/sage/device-lib.sh    # say, el, stamped
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
say "device $dev, commit $COMMIT, nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"
# stamped: the carried build output $1 was built at this commit (build/gpu/carried.commit
# names it; one hash a prefix of the other)
att_run() {   # $1: seconds
    ( export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_NUM_THREADS=14
      unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL KVQ_SAGE_VT
      { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the pipeline's core: the default, FA3 at its default level given the V quantizer's V~ [SAGE-DEV-15]); at most $1 s, cut there (the cases reported are judged, the rest not run)"
        stdbuf -oL timeout "$1" build/gpu/kvq_gpu_sage_attn_test
        echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1 )
}
att_report() {
    say "attention device test (to $(el) s): $(grep -cE '^  case' "$OUT/sage-attn-test.txt") cases reported, $(tail -2 "$OUT/sage-attn-test.txt" | tr '\n' ' ')"
    grep -E "FAIL|differ|passed" "$OUT/sage-attn-test.txt" | head -8 >> "$OUT/summary.txt"
    grep -qE "exit (0|124)$" "$OUT/sage-attn-test.txt" && ! grep -qE "^ *FAIL" "$OUT/sage-attn-test.txt"
}

if [ "$MODE" = attn ]; then
    rc=0
    if stamped build/gpu/kvq_gpu_sage_attn_test; then
        att_run 140
        att_report || rc=1
        grep -q "exit 0$" "$OUT/sage-attn-test.txt" || rc=1
    else
        say "error: build/gpu/kvq_gpu_sage_attn_test not carried at $COMMIT"
        rc=2
    fi
    say "finished in $(el) s, exit $rc"
    exit $rc
fi

if [ "$MODE" = bench ]; then
    L=build/gpu/libkvq_sage_attn.so
    if stamped "$L"; then
        say "library carried: $L, built at $(cat build/gpu/carried.commit)"
    else
        . gpu/sage/cutlass-inc.sh
        kvq_cutlass_inc || exit 2
        rm -f "$L"
        if ! make -j16 CUTLASS_INC="$inc" "$L" > "$OUT/build.log" 2>&1; then
            say "error: the build failed (build.log)"
            tail -20 "$OUT/build.log"
            exit 2
        fi
        say "library built here in $(el) s"
    fi
    unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL KVQ_SAGE_VT
    # the check and the planted build of this commit's core and V~ first, when carried (a few s)
    crc=0
    if stamped build/gpu/kvq_sage_fa3_test && stamped build/gpu/kvq_sage_fa3_test_plant; then
        { stdbuf -oL timeout 30 build/gpu/kvq_sage_fa3_test_plant --plant --forms 3 --commit "$COMMIT"
          echo "kvq_sage_fa3_test_plant --plant exit $?"
          stdbuf -oL timeout 40 build/gpu/kvq_sage_fa3_test --forms 3 --commit "$COMMIT"
          echo "kvq_sage_fa3_test --forms 3 exit $?"; } > "$OUT/fa3-test.txt" 2>&1
        grep -E "^fa3-test (--plant|check|i2f and|V~ check)|FAILED|exit [0-9]+$" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
        grep -q "plant exit 0$" "$OUT/fa3-test.txt" && grep -q "forms 3 exit 0$" "$OUT/fa3-test.txt" || crc=1
        say "checks done at $(el) s, $([ $crc = 0 ] && echo "passed, plants caught" || echo FAILED)"
    else
        say "kvq_sage_fa3_test not carried at $COMMIT: the checks not run"
    fi
    left=$(( 147 - $(el) ))
    say "the benchmark gets $left s"
    OUT=$OUT LIB=$L REPS=${REPS:-5} SIZES=$SIZES TIMEOUT=$left \
        bash gpu/sage/device-attn-bench.sh --no-buffer0 --no-loop --vt0 --batches 1,4 --kv-heads 32,8 \
        --long ${LONG-65536,131072} --samples 32 --row-budget 0.8 > /dev/null 2>&1
    rc=$?
    grep -E "^B=|^- |MET|NOT" "$OUT/sage-attn-bench.txt" | grep -v "smooth_k" >> "$OUT/summary.txt" 2>/dev/null
    tail -3 "$OUT/sage-attn-bench.log" >> "$OUT/summary.txt" 2>/dev/null
    rm -f "$OUT/device.txt" "$OUT/sage-attn-bench.log"
    [ "$crc" = 0 ] || rc=1
    say "finished in $(el) s, exit $rc"
    exit $rc
fi

need=
for f in build/gpu/kvq_sage_fa3_test build/gpu/kvq_sage_fa3_test_plant; do
    stamped "$f" || need="$need $f"
done
ATT=
if stamped build/gpu/kvq_gpu_sage_attn_test; then
    att_run "${ATT_S:-112}" &
    ATT=$!
else
    say "attention device test not carried at $COMMIT: not run"
fi
if [ -n "$need" ]; then
    . gpu/sage/cutlass-inc.sh
    kvq_cutlass_inc || exit 2
    say "not carried at $COMMIT:$need: built here"
    rm -f $need
    if ! make -j16 CUTLASS_INC="$inc" $need > "$OUT/build.log" 2>&1; then
        say "error: the build failed (build.log)"
        tail -20 "$OUT/build.log"
        [ -n "$ATT" ] && wait "$ATT"
        exit 2
    fi
    say "built in $(el) s"
else
    say "carried, built at $(cat build/gpu/carried.commit): kvq_sage_fa3_test, kvq_sage_fa3_test_plant"
fi
rc=0
unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL KVQ_SAGE_VT
{ stdbuf -oL timeout 30 build/gpu/kvq_sage_fa3_test_plant --plant --forms 3 --commit "$COMMIT"
  echo "kvq_sage_fa3_test_plant --plant exit $?"; } > "$OUT/fa3-plant.txt" 2>&1
grep -E "^fa3-test --plant" "$OUT/fa3-plant.txt" >> "$OUT/summary.txt"
grep -q "plant exit 0$" "$OUT/fa3-plant.txt" && say "planted build (core and V~): the check FAILS, as it must" ||
    { say "error: planted build: $(tail -2 "$OUT/fa3-plant.txt" | tr '\n' ' ')"; rc=1; }
{ stdbuf -oL timeout 40 build/gpu/kvq_sage_fa3_test --forms 3 --commit "$COMMIT"
  echo "kvq_sage_fa3_test --forms 3 exit $?"; } > "$OUT/fa3-test.txt" 2>&1
grep -E "^fa3-test (check|i2f and|V~|KVQ|qk_bits)|FAILED|exit [0-9]+$|SKIPPED" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
grep -q "forms 3 exit 0$" "$OUT/fa3-test.txt" || { rc=1; say "error: the check FAILED or did not finish"; }
say "checks done at $(el) s"
if [ -n "$ATT" ]; then
    wait "$ATT"
    att_report || rc=1
fi
# the timing, alone on the device
left=$(( 146 - $(el) ))
[ "$left" -gt 10 ] || left=10
{ stdbuf -oL timeout "$left" build/gpu/kvq_sage_fa3_test --time-only --pipe --forms 3,3v --reps ${REPS:-5} \
      --sizes "$SIZES" --commit "$COMMIT"
  echo "kvq_sage_fa3_test --time-only exit $?"; } >> "$OUT/fa3-test.txt" 2>&1
grep -q "^kvq_sage_fa3_test --time-only exit 0$" "$OUT/fa3-test.txt" || rc=1
grep -E "^fa3-test (timing|pipeline)|DIFFER|time-only exit [0-9]+$" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
# ncu of level 3 without and with V~ in what is left (at most 25 s)
left=$(( 147 - $(el) ))
if [ "$left" -gt 12 ] && command -v ncu > /dev/null; then
    t=$(( left - 2 )); [ "$t" -le 25 ] || t=25
    M=gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active
    M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    M=$M,smsp__inst_executed.sum,launch__registers_per_thread
    { echo "# ncu --metrics $M"
      echo "# sage_fa3_kernel, ping-pong level 3 without V~ (the producer transposes) then given V~, 32 heads, nq = nk = 8192, buffer 128; commit $COMMIT; $t s"
      timeout "$t" ncu --metrics "$M" -k regex:sage_fa3_kernel -c 2 build/gpu/kvq_sage_fa3_test --profile-vt 8192 2>&1 |
          grep -v '^==PROF==' ; } > "$OUT/vt-profile.txt" 2>&1
    grep -E "sage_fa3_kernel|duration|issue_active|eligible|bank_conflicts|inst_executed|registers|rror" "$OUT/vt-profile.txt" |
        sed 's/sage_fa3_kernel<\([^>]*\)>.*/sage_fa3_kernel<\1>/' | cut -c1-160 | head -24 >> "$OUT/summary.txt"
else
    say "ncu profile skipped ($left s left or no ncu)"
fi
say "finished in $(el) s, exit $rc"
exit $rc
