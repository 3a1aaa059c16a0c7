#!/bin/bash
# device-vidkv.sh -- the VIDKV GPU checks in one device call: build the device test and the
# benchmark there (nvcc + cuFFT; they link ref/fast only, no MPFR), run the judge's self-test,
# the device test (exact parts bitwise against ref/fast/vidkv.c, the FFT path at the bounded
# level), the benchmark (256 MiB, medians of 30) and, when ncu is there, the instructions
# each kernel executes per element of a small run.
# usage: gpu/vidkv/device-vidkv.sh   (from the repository root; outputs under $OUT;
#        env KVQ_COMMIT, KVQ_SEED, KVQ_VIDKV_CASES, REPS, JOBS; programs already in build/gpu/
#        (carried from a `make gpu` elsewhere) are used as they are unless VIDKV_BUILD is set)
set -u
OUT=${OUT:-/tmp/kvq-vidkv-out}
COMMIT=${KVQ_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}
mkdir -p "$OUT"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); dev=${dev:-"no nvidia-smi"}
rc=0
T=build/gpu/kvq_gpu_vidkv_test
B=build/gpu/kvq_vidkv_bench
if [ -x "$T" ] && [ -x "$B" ] && [ -z "${VIDKV_BUILD:-}" ]; then
  # carried from a `make gpu` elsewhere (they need the device's libcufft.so.12)
  { echo "# carried programs on $dev; commit $COMMIT"; ldd "$T" | grep -i cufft; echo "make exit 0"; } \
      > "$OUT/vidkv-build.txt" 2>&1
else
  { echo "# build on $dev; commit $COMMIT"; nvcc --version | tail -2
    make -j"${JOBS:-16}" "$T" "$B" 2>&1 | grep -v 'ptxas info'; echo "make exit ${PIPESTATUS[0]}"; } \
      > "$OUT/vidkv-build.txt" 2>&1
fi
grep -q "make exit 0$" "$OUT/vidkv-build.txt" || { echo "device-vidkv: build failed (vidkv-build.txt)"; exit 1; }
grep -q "libcufft.*not found" "$OUT/vidkv-build.txt" && { echo "device-vidkv: libcufft not found (vidkv-build.txt)"; exit 1; }
{ echo "# gpu/reports/vidkv-gpu-test.txt -- gpu/vidkv/vidkv_test.cu on $dev; commit $COMMIT"
  timeout 60 "$T" --judge-selftest; echo "judge self-test exit $?"
  stdbuf -oL timeout 400 "$T"; echo "kvq_gpu_vidkv_test exit $?"; } > "$OUT/vidkv-gpu-test.txt" 2>&1
grep -q "judge self-test exit 0$" "$OUT/vidkv-gpu-test.txt" || rc=1
grep -q "kvq_gpu_vidkv_test exit 0$" "$OUT/vidkv-gpu-test.txt" || rc=1
# on the device machine a skip is a failure: the test found no usable device
grep -q "SKIPPED" "$OUT/vidkv-gpu-test.txt" && { echo "device-vidkv: the device test SKIPPED (no usable device)"; rc=1; }
{ timeout 240 "$B" --reps "${REPS:-30}" --json "$OUT/vidkv-bench.json" --commit "$COMMIT"
  echo "kvq_vidkv_bench exit $?"; } > "$OUT/vidkv-bench.txt" 2>&1
grep -q "kvq_vidkv_bench exit 0$" "$OUT/vidkv-bench.txt" || rc=1
grep -q "SKIPPED" "$OUT/vidkv-bench.txt" && rc=1
if command -v ncu > /dev/null 2>&1; then
  # dynamic instruction counts (warp-level SASS instructions x 32 / elements of the small run)
  els=$("$B" --small --reps 1 | awk '/^elements/ { print $2 }')
  { echo "# gpu/reports/vidkv-inst.txt -- thread instructions per element, kvq_vidkv_bench --small on $dev; commit $COMMIT"
    echo "# elements $els; ncu metric smsp__thread_inst_executed.sum, summed per kernel over its launches"
    timeout 240 ncu --metrics smsp__thread_inst_executed.sum --csv -k regex:'vk_' "$B" --small --reps 1 2>/dev/null |
      awk -F'","' -v els="$els" 'NR > 1 && $0 ~ /thread_inst_executed/ { k = $5; v = $NF; gsub(/[",]/, "", v); s[k] += v }
        END { for (k in s) printf "%-40s %10.2f\n", k, s[k] / els }' | sort; } > "$OUT/vidkv-inst.txt" 2>&1
fi
exit $rc
