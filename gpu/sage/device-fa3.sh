#!/bin/bash
# device-fa3.sh -- the FlashAttention-3-structured SAGE core (gpu/sage/sage_fa3.cu,
# spec/sage.md [SAGE-DEV-12], its levels [SAGE-DEV-13]) in one device call, within 150 s
# including the build: builds ONLY build/gpu/kvq_sage_fa3_test and
# build/gpu/kvq_sage_fa3_test_plant (no MPFR; the CUTLASS/CuTe headers unpacked from the
# carried wheel nvidia_cutlass-4.2.0.0, found as build/deps/*.whl or anywhere under
# .devcarry/, or $CUTLASS_WHEEL), then runs
#   - the planted build (a buffer flush skipped): its check must FAIL in every form,
#   - the check (i2f_exact against I2F over [-2^22, 2^22]; a bad KVQ_SAGE_FA3_LEVEL
#     refused; every output of the FA3 core, serial form and ping-pong levels 0..3,
#     against the warpgroup core bit for bit on random shapes, partial blocks, causal,
#     the three buffers, extreme codes; the default core; qk_bits 4; the pipeline with
#     either core) and the timing of the warpgroup core and every form side by side at
#     32 heads, N = 4K..32K, causal and not, with a copy of the input bytes,
#   - an ncu profile of the ping-pong form at levels 0..3 at N = 8192, 32 heads (issue
#     slots, eligible warps, registers and the XU / FMA / ALU pipes' instruction counts
#     and utilisation), at most 30 s,
#   - from the start, under the build and the checks (none of them timed), the attention
#     device test build/gpu/kvq_gpu_sage_attn_test (built elsewhere: it links MPFR;
#     carried, with .devcarry/lib) with the FA3 core, level 3, in the pipeline, at most
#     105 s (a timeout there reads as such, not as a pass); the timing and the profile
#     wait for it,
# and writes under $OUT: summary.txt, fa3-test.txt, fa3-plant.txt, fa3-profile.txt,
# sage-attn-test.txt, build.log.
# With `bench` first: takes build/gpu/libkvq_sage_attn.so as carried when its stamp
# build/gpu/libkvq_sage_attn.commit names this commit, else builds ONLY it (with the FA3
# core), and runs gpu/sage/device-attn-bench.sh on it in the time left: torch SDPA
# flash/cuDNN/efficient, SageAttention 1 from .devcarry/wheels and kvq's pipeline (the
# default core; the FA3 core at level 0 beside it at batch 1, 32 KV heads), batch 1 and 4,
# 32 and 8 KV heads (of 32 query heads), N = SIZES (default 4K..32K) causal and not, then
# LONG (default 65536,131072) non-causal at batch 1; 5 reps (at most ~1 s of calls a
# row), accuracy on 64 rows a head at 32 heads; writing sage-attn-bench.{txt,json},
# sage-attn-bench.log, device.txt, summary.txt, build.log.
# With `attn` first: nothing is built; runs the attention device test
# build/gpu/kvq_gpu_sage_attn_test (built elsewhere, it links MPFR: carried, with
# .devcarry/lib) with the default core -- the FA3 one -- in the pipeline: every
# intermediate against ref/fast, the traced warpgroup core's output against the pipeline's
# bit for bit, every output within the bound; writes sage-attn-test.txt, summary.txt.
# With `final` first: the programs carried from a build at this commit (stamp
# build/gpu/carried.commit: build/gpu/kvq_sage_fa3_test, _plant, libkvq_sage_attn.so and the
# MPFR-linked kvq_gpu_sage_attn_test), else built here (all but the last), then: the planted
# build and the check of the level-3 core (levels 0..2 and the serial form are the code the
# check-mode run judged), the attention device test for its first ATT_S (40) s under them,
# the cores timed at levels 0, 2 and 3 (N = 8192, 32768), and the benchmark table as
# `bench` in the time left (accuracy on 32 rows a head at 32 heads, ~0.8 s of calls a row);
# when level 3 fails or does not finish its check, the timing and the table take level 2.
# Writes summary.txt, fa3-plant.txt, fa3-test.txt, sage-attn-test.txt, sage-attn-bench.txt,
# sage-attn-bench.json (the log and device.txt of device-attn-bench.sh not kept: six files).
# usage: gpu/sage/device-fa3.sh [bench|attn|final] [SIZES]   (env OUT, KVQ_COMMIT)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-fa3-out}
COMMIT=${KVQ_COMMIT:-unknown}
MODE=check
case "${1:-}" in bench|attn|final) MODE=$1; shift ;; esac
SIZES=${1:-4096,8192,16384,32768}
mkdir -p "$OUT"
WHL_NAME=nvidia_cutlass-4.2.0.0-py3-none-any.whl
TAG=device-fa3
. gpu/sage/device-lib.sh    # say, el, stamped
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
say "device $dev, commit $COMMIT, nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"

if [ "$MODE" = attn ]; then
    export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL
    { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the pipeline's core: the default, FA3 [SAGE-DEV-12])"
      stdbuf -oL timeout 140 build/gpu/kvq_gpu_sage_attn_test
      echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1
    rc=0
    grep -q "exit 0$" "$OUT/sage-attn-test.txt" || rc=1
    grep -E "FAIL|failed|passed|SKIPPED|exit [0-9]+$" "$OUT/sage-attn-test.txt" | head -40 >> "$OUT/summary.txt"
    say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
    exit $rc
fi
. gpu/sage/cutlass-inc.sh
kvq_cutlass_inc || exit 2
# stamped: the carried build output $1 was built at this commit (its stamp file
# build/gpu/carried.commit names it; one hash a prefix of the other)
if [ "$MODE" = final ]; then
    # the level-3 core's check, a share of the attention device test, both cores timed, and the
    # benchmark table, within 150 s: the programs carried (stamped) or built here
    need=
    for f in build/gpu/kvq_sage_fa3_test build/gpu/kvq_sage_fa3_test_plant build/gpu/libkvq_sage_attn.so; do
        stamped "$f" || need="$need $f"
    done
    if [ -n "$need" ]; then
        say "not carried at $COMMIT:$need: built here"
        rm -f $need
        if ! make -j16 CUTLASS_INC="$inc" $need > "$OUT/build.log" 2>&1; then
            say "error: the build failed (build.log)"
            tail -20 "$OUT/build.log"
            exit 2
        fi
        say "built in $(( $(date +%s) - T0 )) s"
        rm -f "$OUT/build.log"
    else
        say "carried, built at $(cat build/gpu/carried.commit): kvq_sage_fa3_test, kvq_sage_fa3_test_plant, libkvq_sage_attn.so"
    fi
    ATT=
    if stamped build/gpu/kvq_gpu_sage_attn_test; then
        ( export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_NUM_THREADS=14
          unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL
          { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the pipeline's core: the default, FA3 at its default level [SAGE-DEV-12..13]); at most ${ATT_S:-40} s, cut there (the cases reported are judged, the rest not run)"
            stdbuf -oL timeout ${ATT_S:-40} build/gpu/kvq_gpu_sage_attn_test
            echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1 ) &
        ATT=$!
    else
        say "attention device test not carried at $COMMIT: not run"
    fi
    rc=0
    { stdbuf -oL timeout 20 build/gpu/kvq_sage_fa3_test_plant --plant --forms 3 --commit "$COMMIT"
      echo "kvq_sage_fa3_test_plant --plant exit $?"; } > "$OUT/fa3-plant.txt" 2>&1
    grep -q "plant exit 0$" "$OUT/fa3-plant.txt" && say "planted build (level 3): the check FAILS, as it must" ||
        { say "error: planted build (level 3): $(tail -2 "$OUT/fa3-plant.txt" | tr '\n' ' ')"; rc=1; }
    { stdbuf -oL timeout 25 build/gpu/kvq_sage_fa3_test --forms 3 --commit "$COMMIT"
      echo "kvq_sage_fa3_test --forms 3 exit $?"; } > "$OUT/fa3-test.txt" 2>&1
    grep -E "^fa3-test (check|i2f and|KVQ|qk_bits)|FAILED|exit [0-9]+$|SKIPPED" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
    if grep -q "forms 3 exit 0$" "$OUT/fa3-test.txt"; then
        lv=3
    else
        # level 3 not judged equal: the timing and the table take level 2 (judged by the run
        # of the same levels 0..2 before), and say so
        lv=2; rc=1
        export KVQ_SAGE_FA3_LEVEL=2
        say "error: level 3 FAILED or did not finish its check: the timing and the table run level 2"
    fi
    if [ -n "$ATT" ]; then
        wait "$ATT"
        say "attention device test (to $(( $(date +%s) - T0 )) s): $(grep -cE '^  case' "$OUT/sage-attn-test.txt") cases reported, $(tail -1 "$OUT/sage-attn-test.txt")"
        grep -E "FAIL|differ|passed" "$OUT/sage-attn-test.txt" | head -8 >> "$OUT/summary.txt"
        grep -qE "exit (0|124)$" "$OUT/sage-attn-test.txt" || rc=1
        grep -qE "^ *case .*(FAIL|differ)" "$OUT/sage-attn-test.txt" && rc=1
    fi
    { stdbuf -oL timeout 20 build/gpu/kvq_sage_fa3_test --time-only --forms 0,2,$lv --reps 5 --sizes 8192,32768 --commit "$COMMIT"
      echo "kvq_sage_fa3_test --time-only exit $?"; } >> "$OUT/fa3-test.txt" 2>&1
    grep -E "^fa3-test timing|DIFFER|time-only exit [0-9]+$" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
    left=$(( 147 - ($(date +%s) - T0) ))
    say "the benchmark gets $left s (core level $lv)"
    OUT=$OUT LIB=build/gpu/libkvq_sage_attn.so REPS=${REPS:-5} SIZES=$SIZES TIMEOUT=$left \
        bash gpu/sage/device-attn-bench.sh --no-buffer0 --no-loop --level0 --batches 1,4 --kv-heads 32,8 \
        --long ${LONG-65536,131072} --samples 32 --row-budget 0.8 > /dev/null 2>&1 || rc=1
    grep -E "^- |MET|NOT" "$OUT/sage-attn-bench.txt" >> "$OUT/summary.txt" 2>/dev/null
    grep -E "^B=" "$OUT/sage-attn-bench.txt" | grep -E "kvq-b128 |SKIPPED|FAILED" | grep -v smooth_k | head -40 >> "$OUT/summary.txt" 2>/dev/null
    tail -3 "$OUT/sage-attn-bench.log" >> "$OUT/summary.txt" 2>/dev/null
    rm -f "$OUT/device.txt" "$OUT/sage-attn-bench.log"
    say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
    exit $rc
fi
if [ "$MODE" = bench ]; then
    # the library carried with its stamp (the commit it was built at) when that is this
    # commit (one hash a prefix of the other), else built here
    L=build/gpu/libkvq_sage_attn.so
    st=$(cat build/gpu/libkvq_sage_attn.commit 2>/dev/null)
    if [ -f "$L" ] && [ -n "$st" ] && [ "$COMMIT" != unknown ] && { [ "${COMMIT#"$st"}" != "$COMMIT" ] || [ "${st#"$COMMIT"}" != "$st" ]; }; then
        say "library carried: $L, built at $st (sha256 $(sha256sum "$L" | cut -c1-16))" | tee "$OUT/build.log"
    else
        [ -f "$L" ] && say "carried library stamped '${st:-none}', not $COMMIT: built here"
        rm -f "$L"
        if ! make -j16 CUTLASS_INC="$inc" "$L" > "$OUT/build.log" 2>&1; then
            say "error: the build failed (build.log)"
            tail -20 "$OUT/build.log"
            exit 2
        fi
    fi
    left=$(( 147 - ($(date +%s) - T0) ))
    say "ready in $(( $(date +%s) - T0 )) s; the benchmark gets $left s"
    # the table of issue 33: batch 1 and 4, 32 and 8 KV heads, N = SIZES causal and not, then
    # 64K and 128K non-causal; the FA3 core at level 0 beside the default in the first group
    OUT=$OUT LIB=$L REPS=${REPS:-5} SIZES=$SIZES TIMEOUT=$left \
        bash gpu/sage/device-attn-bench.sh --no-buffer0 --no-loop --level0 --batches 1,4 --kv-heads 32,8 \
        --long ${LONG-65536,131072} --samples 64 --row-budget 1.0 > /dev/null 2>&1
    rc=$?
    grep -E "^B=|^- |MET|NOT" "$OUT/sage-attn-bench.txt" | grep -v "smooth_k" >> "$OUT/summary.txt" 2>/dev/null
    say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
    exit $rc
fi
# the attention device test (carried; CPU and GPU) runs from here, under the build and the
# checks (none of them timed); the timing and the profile wait for it
ATT=
if [ -x build/gpu/kvq_gpu_sage_attn_test ]; then
    ( export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_NUM_THREADS=12
      unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL
      { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the pipeline's core: the default, FA3 at its default level [SAGE-DEV-12..13]); at most 105 s"
        stdbuf -oL timeout 105 build/gpu/kvq_gpu_sage_attn_test
        echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1 ) &
    ATT=$!
else
    say "attention device test not carried (build/gpu/kvq_gpu_sage_attn_test): not run"
fi
if ! make -j16 CUTLASS_INC="$inc" build/gpu/kvq_sage_fa3_test build/gpu/kvq_sage_fa3_test_plant > "$OUT/build.log" 2>&1; then
    say "error: the build failed (build.log)"
    tail -20 "$OUT/build.log"
    [ -n "$ATT" ] && wait "$ATT"
    exit 2
fi
say "built in $(( $(date +%s) - T0 )) s"
rc=0
{ stdbuf -oL timeout 30 build/gpu/kvq_sage_fa3_test_plant --plant --commit "$COMMIT"
  echo "kvq_sage_fa3_test_plant --plant exit $?"; } > "$OUT/fa3-plant.txt" 2>&1
if grep -q "plant exit 0$" "$OUT/fa3-plant.txt"; then
    say "planted build: the check FAILS in every form, as it must"
else
    say "error: planted build: $(tail -2 "$OUT/fa3-plant.txt" | tr '\n' ' ')"
    rc=1
fi
grep -E "^fa3-test --plant" "$OUT/fa3-plant.txt" >> "$OUT/summary.txt"
{ stdbuf -oL timeout 40 build/gpu/kvq_sage_fa3_test --commit "$COMMIT"
  echo "kvq_sage_fa3_test exit $?"; } > "$OUT/fa3-test.txt" 2>&1
grep -q "^kvq_sage_fa3_test exit 0$" "$OUT/fa3-test.txt" || rc=1
grep -E "^fa3-test (check|i2f|KVQ|qk_bits)|FAILED|exit [0-9]+$|SKIPPED" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
if [ -n "$ATT" ]; then
    wait "$ATT"
    say "attention device test (to $(( $(date +%s) - T0 )) s): $(grep -cE '^  case' "$OUT/sage-attn-test.txt") cases reported, $(tail -1 "$OUT/sage-attn-test.txt")"
    grep -E "FAIL|differ|passed" "$OUT/sage-attn-test.txt" | head -12 >> "$OUT/summary.txt"
    # exit 124: cut at its time (its cases so far are in the file), not judged as a whole
    grep -qE "exit (0|124)$" "$OUT/sage-attn-test.txt" || rc=1
fi
# the timing, alone on the device
left=$(( 148 - 22 - ($(date +%s) - T0) ))
[ "$left" -gt 10 ] || left=10
{ stdbuf -oL timeout "$left" build/gpu/kvq_sage_fa3_test --time-only --reps ${REPS:-7} --sizes "$SIZES" --commit "$COMMIT"
  echo "kvq_sage_fa3_test --time-only exit $?"; } >> "$OUT/fa3-test.txt" 2>&1
grep -q "^kvq_sage_fa3_test --time-only exit 0$" "$OUT/fa3-test.txt" || rc=1
grep -E "^fa3-test timing|DIFFER|time-only exit [0-9]+$" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
# the profile in what is left (at most 30 s)
left=$(( 148 - ($(date +%s) - T0) ))
if [ "$left" -gt 12 ] && command -v ncu > /dev/null; then
    M=sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active
    for p in xu fma alu; do
        M=$M,sm__inst_executed_pipe_$p.sum,sm__inst_executed_pipe_$p.avg.pct_of_peak_sustained_active
    done
    M=$M,launch__registers_per_thread,gpu__time_duration.sum
    # the tensor pipe's metric first; a metric this ncu does not know fails the whole list:
    # then the list without it, then the sections
    for metrics in "$M,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active" "$M"; do
        left=$(( 148 - ($(date +%s) - T0) ))
        [ "$left" -gt 8 ] || break
        t=$(( left - 2 )); [ "$t" -le 30 ] || t=30
        { echo "# ncu --metrics $metrics"
          echo "# sage_fa3_kernel, ping-pong levels 0..3 in order, 32 heads, nq = nk = 8192, buffer 128; commit $COMMIT; $t s"
          timeout "$t" ncu --metrics "$metrics" -k regex:sage_fa3_kernel -c 4 build/gpu/kvq_sage_fa3_test --profile 8192 2>&1 |
            grep -v '^==PROF==' ; } >> "$OUT/fa3-profile.txt" 2>&1
        grep -qE "^ +sm__inst_executed_pipe_xu\.sum" "$OUT/fa3-profile.txt" && break
    done
    left=$(( 148 - ($(date +%s) - T0) ))
    if ! grep -qE "^ +sm__inst_executed_pipe_xu\.sum" "$OUT/fa3-profile.txt" && [ "$left" -gt 8 ]; then
        { echo "# the metric lists failed (above); ncu --section SpeedOfLight,SchedulerStats,LaunchStats"
          timeout $(( left - 2 )) ncu --section SpeedOfLight --section SchedulerStats --section LaunchStats \
              -k regex:sage_fa3_kernel -c 4 build/gpu/kvq_sage_fa3_test --profile 8192 2>&1 | grep -v '^==PROF==' ; } \
            >> "$OUT/fa3-profile.txt" 2>&1
    fi
    grep -E "sage_fa3_kernel|pipe_(xu|fma|alu)|issue_active|eligible|registers|duration|gmma|Issue Slots|Eligible|Registers|Duration|rror" \
        "$OUT/fa3-profile.txt" | sed 's/sage_fa3_kernel<\([^>]*\)>.*/sage_fa3_kernel<\1>/' | cut -c1-160 | head -60 >> "$OUT/summary.txt"
else
    say "ncu profile skipped ($left s left or no ncu)"
fi
say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
exit $rc
