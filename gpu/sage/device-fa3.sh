#!/bin/bash
# device-fa3.sh -- the FlashAttention-3-structured SAGE core (gpu/sage/sage_fa3.cu,
# spec/sage.md [SAGE-DEV-12]) in one device call, within 180 s including the build:
# builds ONLY build/gpu/kvq_sage_fa3_test and build/gpu/kvq_sage_fa3_test_plant (no MPFR;
# the CUTLASS/CuTe headers unpacked from the carried wheel nvidia_cutlass-4.2.0.0, found
# as build/deps/*.whl or anywhere under .devcarry/, or $CUTLASS_WHEEL), then runs
#   - the planted build (a buffer flush skipped): its check must FAIL,
#   - the check (every output of the FA3 core against the warpgroup core bit for bit on
#     random shapes, partial blocks, causal, the three buffers, extreme codes; the
#     default core; qk_bits 4; the pipeline with either core) and the timing of both
#     cores side by side at 32 heads, N = 4K..32K, causal and not, with a copy of the
#     input bytes,
#   - an ncu profile of one FA3 launch at N = 8192, 32 heads (--set full, the summary
#     lines), at most 45 s,
#   - in the time left, the attention device test build/gpu/kvq_gpu_sage_attn_test (built
#     elsewhere: it links MPFR; carried, with .devcarry/lib) with the FA3 core in the
#     pipeline (a timeout there reads as such, not as a pass),
# and writes under $OUT: summary.txt, fa3-test.txt, fa3-plant.txt, fa3-profile.txt,
# sage-attn-test.txt, build.log.
# With `bench` first: builds ONLY build/gpu/libkvq_sage_attn.so (with the FA3 core) and runs
# gpu/sage/device-attn-bench.sh on it in the time left (torch SDPA flash/cuDNN/efficient,
# SageAttention 1 from .devcarry/wheels, kvq's pipeline with the default core and with the
# warpgroup core, SIZES default 8192,32768, 5 reps, no buffer-0 rows), writing
# sage-attn-bench.{txt,json}, sage-attn-bench.log, summary.txt, build.log.
# With `attn` first: nothing is built; runs the attention device test
# build/gpu/kvq_gpu_sage_attn_test (built elsewhere, it links MPFR: carried, with
# .devcarry/lib) with the default core -- the FA3 one -- in the pipeline: every
# intermediate against ref/fast, the traced warpgroup core's output against the pipeline's
# bit for bit, every output within the bound; writes sage-attn-test.txt, summary.txt.
# usage: gpu/sage/device-fa3.sh [bench|attn] [SIZES]   (env OUT, KVQ_COMMIT)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-fa3-out}
COMMIT=${KVQ_COMMIT:-unknown}
MODE=check
case "${1:-}" in bench|attn) MODE=$1; shift ;; esac
if [ "$MODE" = bench ]; then SIZES=${1:-8192,32768}; else SIZES=${1:-4096,8192,16384,32768}; fi
mkdir -p "$OUT"
WHL_NAME=nvidia_cutlass-4.2.0.0-py3-none-any.whl
say() { echo "device-fa3: $*" | tee -a "$OUT/summary.txt"; }
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
say "device $dev, commit $COMMIT, nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"

if [ "$MODE" = attn ]; then
    export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    unset KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL
    { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the pipeline's core: the default, FA3 [SAGE-DEV-12])"
      stdbuf -oL timeout 170 build/gpu/kvq_gpu_sage_attn_test
      echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1
    rc=0
    grep -q "exit 0$" "$OUT/sage-attn-test.txt" || rc=1
    grep -E "FAIL|failed|passed|SKIPPED|exit [0-9]+$" "$OUT/sage-attn-test.txt" | head -40 >> "$OUT/summary.txt"
    say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
    exit $rc
fi
. gpu/sage/cutlass-inc.sh
kvq_cutlass_inc || exit 2
if [ "$MODE" = bench ]; then
    if ! make -j16 CUTLASS_INC="$inc" build/gpu/libkvq_sage_attn.so > "$OUT/build.log" 2>&1; then
        say "error: the build failed (build.log)"
        tail -20 "$OUT/build.log"
        exit 2
    fi
    left=$(( 176 - ($(date +%s) - T0) ))
    say "built in $(( $(date +%s) - T0 )) s; the benchmark gets $left s"
    OUT=$OUT LIB=build/gpu/libkvq_sage_attn.so REPS=${REPS:-5} SIZES=$SIZES TIMEOUT=$left \
        bash gpu/sage/device-attn-bench.sh --no-buffer0 > /dev/null 2>&1
    rc=$?
    grep -E "^ *[0-9]+ +[01] |^- |MET|NOT" "$OUT/sage-attn-bench.txt" >> "$OUT/summary.txt" 2>/dev/null
    say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
    exit $rc
fi
if ! make -j16 CUTLASS_INC="$inc" build/gpu/kvq_sage_fa3_test build/gpu/kvq_sage_fa3_test_plant > "$OUT/build.log" 2>&1; then
    say "error: the build failed (build.log)"
    tail -20 "$OUT/build.log"
    exit 2
fi
say "built in $(( $(date +%s) - T0 )) s"
rc=0
{ stdbuf -oL timeout 40 build/gpu/kvq_sage_fa3_test_plant --plant --commit "$COMMIT"
  echo "kvq_sage_fa3_test_plant --plant exit $?"; } > "$OUT/fa3-plant.txt" 2>&1
if grep -q "plant exit 0$" "$OUT/fa3-plant.txt"; then
    say "planted build: the check FAILS, as it must"
else
    say "error: planted build: $(tail -2 "$OUT/fa3-plant.txt" | tr '\n' ' ')"
    rc=1
fi
left=$(( 175 - 40 - ($(date +%s) - T0) ))
[ "$left" -gt 30 ] || left=30
{ stdbuf -oL timeout "$left" build/gpu/kvq_sage_fa3_test --time --sizes "$SIZES" --commit "$COMMIT"
  echo "kvq_sage_fa3_test exit $?"; } > "$OUT/fa3-test.txt" 2>&1
grep -q "^kvq_sage_fa3_test exit 0$" "$OUT/fa3-test.txt" || rc=1
grep -E "^fa3-test (check|qk_bits|pipeline|timing)|FAILED|exit [0-9]+$|SKIPPED" "$OUT/fa3-test.txt" >> "$OUT/summary.txt"
grep -E "^  " "$OUT/fa3-test.txt" | head -12 >> "$OUT/summary.txt"
# the profile (at most 45 s), then the attention device test in what is left
left=$(( 178 - ($(date +%s) - T0) ))
if [ "$left" -gt 40 ] && command -v ncu > /dev/null; then
    t=$(( left - 30 )); [ "$t" -le 45 ] || t=45
    { echo "# ncu --set full, sage_fa3_kernel, 32 heads, nq = nk = 8192, buffer 128; commit $COMMIT"
      timeout "$t" ncu --set full -k regex:sage_fa3_kernel -c 1 build/gpu/kvq_sage_fa3_test --profile 8192 2>&1 |
        grep -v '^==PROF==' | grep -E "Duration|Throughput|Pipe|Issue|Registers|Occupancy|Block Size|Grid Size|Shared Memory|Warp Cycles|Eligible|Executed Ipc|Active Warps|Theoretical|tensor|Tensor|status" ; } \
        > "$OUT/fa3-profile.txt" 2>&1
    head -40 "$OUT/fa3-profile.txt" >> "$OUT/summary.txt"
else
    say "ncu profile skipped ($left s left or no ncu)"
fi
left=$(( 178 - ($(date +%s) - T0) ))
if [ "$left" -ge 20 ] && [ -x build/gpu/kvq_gpu_sage_attn_test ]; then
    export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the pipeline's core: the default, FA3 [SAGE-DEV-12]); $left s"
      stdbuf -oL timeout "$left" build/gpu/kvq_gpu_sage_attn_test
      echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1
    say "attention device test ($left s): $(grep -cE '^  case' "$OUT/sage-attn-test.txt") cases reported, $(tail -1 "$OUT/sage-attn-test.txt")"
    grep -E "FAIL|differ|passed" "$OUT/sage-attn-test.txt" | head -12 >> "$OUT/summary.txt"
    # exit 124: cut at the time left (its cases so far are in the file), not judged as a whole
    grep -qE "exit (0|124)$" "$OUT/sage-attn-test.txt" || rc=1
else
    say "attention device test skipped ($left s left or not carried)"
fi
say "finished in $(( $(date +%s) - T0 )) s, exit $rc"
exit $rc
