#!/bin/bash
# device-vidkv.sh -- the VIDKV GPU checks in one device call: build the device test, the
# benchmark and the CUDA subject there (nvcc + cuFFT; they link ref/fast only, no MPFR), run
# the judge's self-test, the device test (exact parts bitwise against ref/fast/vidkv.c, STP
# included; the FFT path at the bounded level), the benchmark (256 MiB, medians of 30), the
# GPU subject's `kvq verify` on the VIDKV standard vectors (kvq and its MPFR/GMP libraries
# carried: .devcarry/kvq, .devcarry/lib/, as gpu/device-cert.sh carries them) and, when ncu
# is there, the instructions each kernel executes per element of a small run.
# usage: gpu/vidkv/device-vidkv.sh   (from the repository root; outputs under $OUT)
#   vidkv-build.txt       the build (or the carried programs' cuFFT)
#   vidkv-gpu-test.txt    judge self-test, then the device test: "N passed, 0 failed", exit 0
#   vidkv-bench.txt/json  gpu/vidkv/vidkv_bench.cu against a device copy
#   vidkv-verify-gpu.txt/json  kvq verify, the CUDA subject: "N passed, 0 failed", no case skipped
#   vidkv-plant.txt       the device test over kernels with one planted bug each
#                         (KVQ_VIDKV_PLANT = 1..5, gpu/vidkv/rules.mk): each must FAIL (exit 1)
#   vidkv-inst.txt        thread instructions per element of every vk_ kernel (ncu; absent without it)
# env: KVQ_COMMIT, KVQ_SEED, KVQ_VIDKV_CASES, REPS, JOBS, PLANT_CASES (60: the planted runs'
#      random cases a kind); programs already in build/gpu/ (carried
#      from a `make gpu` elsewhere) are used as they are unless VIDKV_BUILD is set.
# Exit status 0 when every step above went as required; 1 otherwise.
set -u
OUT=${OUT:-/tmp/kvq-vidkv-out}
C=.devcarry
COMMIT=${KVQ_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); dev=${dev:-"no nvidia-smi"}
rc=0
T=build/gpu/kvq_gpu_vidkv_test
B=build/gpu/kvq_vidkv_bench
S=build/gpu/libkvq_subject_gpu.so
P=build/gpu/kvq_gpu_vidkv_test_plant
if [ -x "$T" ] && [ -x "$B" ] && [ -f "$S" ] && [ -x "${P}5" ] && [ -z "${VIDKV_BUILD:-}" ]; then
  # carried from a `make gpu` elsewhere (they need the device's libcufft.so.12)
  { echo "# carried programs on $dev; commit $COMMIT"; ldd "$T" | grep -i cufft; echo "make exit 0"; } \
      > "$OUT/vidkv-build.txt" 2>&1
else
  { echo "# build on $dev; commit $COMMIT"; nvcc --version | tail -2
    make -j"${JOBS:-16}" "$T" "$B" "$S" gpu-vidkv-plant 2>&1 | grep -v 'ptxas info'; echo "make exit ${PIPESTATUS[0]}"; } \
      > "$OUT/vidkv-build.txt" 2>&1
fi
grep -q "make exit 0$" "$OUT/vidkv-build.txt" || { echo "device-vidkv: build failed (vidkv-build.txt)"; tail -20 "$OUT/vidkv-build.txt"; exit 1; }
grep -q "libcufft.*not found" "$OUT/vidkv-build.txt" && { echo "device-vidkv: libcufft not found (vidkv-build.txt)"; exit 1; }
{ echo "# gpu/reports/vidkv-gpu-test.txt -- gpu/vidkv/vidkv_test.cu on $dev; commit $COMMIT"
  timeout 60 "$T" --judge-selftest; echo "judge self-test exit $?"
  stdbuf -oL timeout 420 "$T"; echo "kvq_gpu_vidkv_test exit $?"; } > "$OUT/vidkv-gpu-test.txt" 2>&1
grep -q "judge self-test exit 0$" "$OUT/vidkv-gpu-test.txt" || rc=1
grep -q "kvq_gpu_vidkv_test exit 0$" "$OUT/vidkv-gpu-test.txt" || rc=1
# the device test's closing count: passes and no failure
grep -Eq "^[1-9][0-9]* passed, 0 failed$" "$OUT/vidkv-gpu-test.txt" || rc=1
# on the device machine a skip is a failure: the test found no usable device
grep -q "SKIPPED" "$OUT/vidkv-gpu-test.txt" && { echo "device-vidkv: the device test SKIPPED (no usable device)"; rc=1; }
{ echo "# gpu/vidkv/vidkv_test.cu over kernels with a planted bug (KVQ_VIDKV_PLANT); each must FAIL"
  for k in 1 2 3 4 5; do
    KVQ_VIDKV_CASES=${PLANT_CASES:-60} stdbuf -oL timeout 200 "$P$k" > "$OUT/plant$k.log" 2>&1
    t=$?
    if [ $t -eq 1 ] && grep -q "^FAIL" "$OUT/plant$k.log"; then
      echo "plant $k: caught (exit 1; $(tail -1 "$OUT/plant$k.log"))"
    else
      echo "plant $k: NOT caught (exit $t; $(tail -1 "$OUT/plant$k.log"))"
    fi
    grep -m 2 "^FAIL" "$OUT/plant$k.log"
    rm -f "$OUT/plant$k.log"
  done; } > "$OUT/vidkv-plant.txt" 2>&1
grep -q "NOT caught" "$OUT/vidkv-plant.txt" && rc=1
[ "$(grep -c "^plant [0-9]: caught" "$OUT/vidkv-plant.txt")" -eq 5 ] || rc=1
{ timeout 240 "$B" --reps "${REPS:-30}" --json "$OUT/vidkv-bench.json" --commit "$COMMIT"
  echo "kvq_vidkv_bench exit $?"; } > "$OUT/vidkv-bench.txt" 2>&1
grep -q "kvq_vidkv_bench exit 0$" "$OUT/vidkv-bench.txt" || rc=1
grep -q "SKIPPED" "$OUT/vidkv-bench.txt" && rc=1
# the GPU subject on the VIDKV standard vectors: every case answered and passed
{ echo "# gpu/reports/vidkv-verify-gpu.txt -- kvq verify of the CUDA subject on $dev; commit $COMMIT"
  if [ -x "$C/kvq" ]; then
    vec=$(mktemp -d)/vidkv-standard.vec
    timeout 120 "$C/kvq" gen --family vidkv --level standard -o "$vec"; echo "kvq gen exit $?"
    timeout 300 "$C/kvq" verify --vectors "$vec" --subject "$S" --json "$OUT/vidkv-verify-gpu.json"
    echo "kvq verify exit $?"
    rm -f "$vec"
  else
    echo "no $C/kvq carried: the verification did not run"
  fi; } > "$OUT/vidkv-verify-gpu.txt" 2>&1
grep -q "kvq verify exit 0$" "$OUT/vidkv-verify-gpu.txt" || rc=1
grep -Eq "^[1-9][0-9]* passed, 0 failed$" "$OUT/vidkv-verify-gpu.txt" || rc=1
grep -qi "skipped" "$OUT/vidkv-verify-gpu.txt" && { echo "device-vidkv: kvq verify skipped cases"; rc=1; }
if command -v ncu > /dev/null 2>&1; then
  # dynamic instruction counts (warp-level SASS instructions x 32 / elements of the small run)
  els=$("$B" --small --reps 1 | awk '/^elements/ { print $2 }')
  { echo "# gpu/reports/vidkv-inst.txt -- thread instructions per element, kvq_vidkv_bench --small on $dev; commit $COMMIT"
    echo "# elements $els; ncu metric smsp__thread_inst_executed.sum, summed per kernel over its launches"
    timeout 240 ncu --metrics smsp__thread_inst_executed.sum --csv -k regex:'vk_' "$B" --small --reps 1 2>/dev/null |
      awk -F'","' -v els="$els" 'NR > 1 && $0 ~ /thread_inst_executed/ { k = $5; v = $NF; gsub(/[",]/, "", v); s[k] += v }
        END { for (k in s) printf "%-40s %10.2f\n", k, s[k] / els }' | sort; } > "$OUT/vidkv-inst.txt" 2>&1
fi
tail -2 "$OUT/vidkv-gpu-test.txt"
grep "^plant" "$OUT/vidkv-plant.txt"
grep -E "passed|exit" "$OUT/vidkv-verify-gpu.txt"
grep "^V \|^K \|^copy" "$OUT/vidkv-bench.txt"
exit $rc
