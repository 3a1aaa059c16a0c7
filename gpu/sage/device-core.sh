#!/bin/bash
# device-core.sh -- the FA3 core's level 5 (spec/sage.md [SAGE-DEV-13]: level 4 with its fixed
# per-block cost off the loop, the same bits) judged and timed against level 4 in one device
# call, within 150 s including any build:
#   - the programs carried from a build at this commit (stamp build/gpu/carried.commit:
#     build/gpu/kvq_sage_fa3_test, build/gpu/kvq_sage_fa3_test_plant and the MPFR-linked
#     build/gpu/kvq_gpu_sage_attn_test), else the first two built here (make -j16, the
#     CUTLASS/CuTe headers from the carried wheel; the attention test is then not run),
#   - from the start, under the checks (none of them timed), the attention device test
#     kvq_gpu_sage_attn_test with the pipeline's core at level ATT_LEVEL (default 5, given V~;
#     KVQ_SAGE_FA3_LEVEL=ATT_LEVEL, "default": unset, the default level given
#     V~): every intermediate against
#     ref/fast, the traced warpgroup core's output against
#     the pipeline's, every output within the bound; at most ATT_S (default 100) s (a timeout
#     reads as such: the cases reported are judged, the rest not run; ATT_S also as the
#     second argument),
#   - the planted build (level 5: the flush's warp vote by all in place of any; the V
#     quantizer's V~ with two quarters of each tile swapped): its check must FAIL,
#   - the check of level 4 and level 5 (ping-pong, the forms 4 and 5): the i2f range, a bad
#     level refused, level 4's precondition on K's map, every output of the core (plain
#     codes and given V~) against the warpgroup core bit for bit on 12 shapes, the default
#     core, qk_bits 4, the pipeline with the core at that level against KVQ_SAGE_CORE=loop;
#     then V~ of the pipeline's V quantizer,
#   - then, alone on the device: the warpgroup core, level 4 and level 5, each with and
#     without V~, side by side (32 heads, N = SIZES, default 8192,32768, causal and not,
#     buffer 128, medians of REPS = 7, a copy of the input bytes): TFLOP/s and the ratios
#     L5 / L4,
#   - in what is left (at most 30 s, ncu present): ncu of one launch each of level 4 and
#     level 5 given V~, then of level 4 and level 5 transposing V's codes, at N = 8192, 32
#     heads (duration, warp instructions, issue slots busy, eligible warps, registers,
#     shared-memory bank conflicts).
# Writes under $OUT: summary.txt, fa3-test.txt, fa3-plant.txt, sage-attn-test.txt,
# core-profile.txt, build.log (only when something was built).
# usage: gpu/sage/device-core.sh [SIZES [ATT_S [ATT_LEVEL]]]   (env OUT, KVQ_COMMIT, ATT_S, REPS)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-core-out}
COMMIT=${KVQ_COMMIT:-unknown}
SIZES=${1:-8192,32768}
ATT_S=${2:-${ATT_S:-100}}
ATT_LEVEL=${3:-5}
mkdir -p "$OUT"
WHL_NAME=nvidia_cutlass-4.2.0.0-py3-none-any.whl
TAG=device-core
. gpu/sage/device-lib.sh    # say, el, stamped
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
say "device $dev, commit $COMMIT, nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"
# stamped: the carried build output $1 was built at this commit (build/gpu/carried.commit
# names it; one hash a prefix of the other)
unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL KVQ_SAGE_VT

ATT=
if stamped build/gpu/kvq_gpu_sage_attn_test; then
    ( export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_NUM_THREADS=12
      [ "$ATT_LEVEL" = default ] || export KVQ_SAGE_FA3_LEVEL=$ATT_LEVEL
      { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT; the pipeline's core: FA3 at level $ATT_LEVEL (KVQ_SAGE_FA3_LEVEL; default: unset, the default level) given the V quantizer's V~; at most $ATT_S s, cut there (the cases reported are judged, the rest not run)"
        stdbuf -oL timeout "$ATT_S" build/gpu/kvq_gpu_sage_attn_test
        echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1 ) &
    ATT=$!
else
    say "attention device test not carried at $COMMIT: not run"
fi
need=
for f in build/gpu/kvq_sage_fa3_test build/gpu/kvq_sage_fa3_test_plant; do
    stamped "$f" || need="$need $f"
done
if [ -n "$need" ]; then
    . gpu/sage/cutlass-inc.sh
    kvq_cutlass_inc || { [ -n "$ATT" ] && wait "$ATT"; exit 2; }
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
{ stdbuf -oL timeout 30 build/gpu/kvq_sage_fa3_test_plant --plant --forms 5 --commit "$COMMIT"
  echo "kvq_sage_fa3_test_plant --plant exit $?"; } > "$OUT/fa3-plant.txt" 2>&1
grep -E "^fa3-test --plant" "$OUT/fa3-plant.txt" >> "$OUT/summary.txt"
grep -q "plant exit 0$" "$OUT/fa3-plant.txt" && say "planted build (level 5's flush vote, V~): the check FAILS, as it must" ||
    { say "error: planted build: $(tail -2 "$OUT/fa3-plant.txt" | tr '\n' ' ')"; rc=1; }
{ stdbuf -oL timeout 50 build/gpu/kvq_sage_fa3_test --forms 4,5 --commit "$COMMIT"
  echo "kvq_sage_fa3_test --forms 4,5 exit $?"; } > "$OUT/fa3-test.txt" 2>&1
grep -E "^fa3-test (check|i2f and|V~ check|level 4 precondition: the pipeline)|FAILED|exit [0-9]+$|SKIPPED" \
    "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
grep -q "forms 4,5 exit 0$" "$OUT/fa3-test.txt" || { rc=1; say "error: the check FAILED or did not finish"; }
say "checks done at $(el) s"
if [ -n "$ATT" ]; then
    wait "$ATT"
    say "attention device test, FA3 at level $ATT_LEVEL (to $(el) s): $(grep -cE '^  case' "$OUT/sage-attn-test.txt") cases reported, $(tail -2 "$OUT/sage-attn-test.txt" | tr '\n' ' ')"
    grep -E "FAIL|passed" "$OUT/sage-attn-test.txt" | head -8 >> "$OUT/summary.txt"
    { grep -qE "exit (0|124)$" "$OUT/sage-attn-test.txt" && ! grep -qE "^ *FAIL" "$OUT/sage-attn-test.txt"; } || rc=1
fi
# the timing, alone on the device: level 4 and level 5 side by side, with and without V~
left=$(( 132 - $(el) ))
[ "$left" -gt 10 ] || left=10
{ stdbuf -oL timeout "$left" build/gpu/kvq_sage_fa3_test --time-only --forms 4,4v,5,5v --reps "${REPS:-7}" \
      --sizes "$SIZES" --commit "$COMMIT"
  echo "kvq_sage_fa3_test --time-only exit $?"; } >> "$OUT/fa3-test.txt" 2>&1
grep -q "^kvq_sage_fa3_test --time-only exit 0$" "$OUT/fa3-test.txt" || rc=1
grep -E "^fa3-test timing|DIFFER|time-only exit [0-9]+$" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
# ncu of level 4 and level 5 given V~ in what is left (at most 30 s)
left=$(( 147 - $(el) ))
if [ "$left" -gt 12 ] && command -v ncu > /dev/null; then
    t=$(( left - 2 )); [ "$t" -le 30 ] || t=30
    M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
    M=$M,smsp__warps_eligible.avg.per_cycle_active,launch__registers_per_thread
    M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
    { echo "# ncu --metrics $M"
      echo "# sage_fa3_kernel given V~: level 4 (<false, true, 4, true>) then level 5 (<false, true, 5, true>); then transposing: level 4 (<false, true, 4, false>), level 5 (<false, true, 5, false>); 32 heads, nq = nk = 8192, buffer 128, non-causal; commit $COMMIT; $t s"
      timeout "$t" ncu --metrics "$M" -k regex:sage_fa3_kernel -c 4 build/gpu/kvq_sage_fa3_test --profile-45 8192 2>&1 |
          grep -v '^==PROF==' ; } > "$OUT/core-profile.txt" 2>&1
    grep -E "sage_fa3_kernel|duration|inst_executed|issue_active|eligible|registers|bank_conflicts|rror" "$OUT/core-profile.txt" |
        sed 's/sage_fa3_kernel<\([^>]*\)>.*/sage_fa3_kernel<\1>/' | cut -c1-160 | head -40 >> "$OUT/summary.txt"
else
    say "ncu profile skipped ($left s left or no ncu)"
fi
say "finished in $(el) s, exit $rc"
exit $rc
