#!/bin/bash
# device-vidkv.sh -- the VIDKV GPU checks on a device: build the device test, its planted-bug
# builds, the benchmark and the CUDA subject there (nvcc + cuFFT; they link ref/fast only, no
# MPFR), run the judge's self-test, the device test (exact parts bitwise against
# ref/fast/vidkv.c, STP included; the FFT path at the bounded level), the planted runs, the
# benchmark (256 MiB, medians of 30), the GPU subject's `kvq verify` on the VIDKV standard
# vectors (kvq and its MPFR/GMP libraries carried: .devcarry/kvq, .devcarry/lib/, as
# gpu/device-cert.sh carries them) and, on request, the instructions each kernel executes
# per element of a small run (ncu).
# usage: gpu/vidkv/device-vidkv.sh [STAGE...]   (from the repository root; outputs under $OUT)
#   stages, in this order whatever the order given (default: build test plant bench verify):
#   build   vidkv-build.txt       the build (or the carried programs' cuFFT)
#   test    vidkv-gpu-test.txt    judge self-test, then the device test (the default seed, then
#                                 EXTRA_SEEDS with EXTRA_CASES a kind): per-kind counts and
#                                 "N passed, 0 failed", exit 0, each run
#   plant   vidkv-plant.txt       the device test over kernels with one planted bug each
#                                 (KVQ_VIDKV_PLANT = 1..5, gpu/vidkv/rules.mk): each must FAIL
#   bench   vidkv-bench.txt/json  gpu/vidkv/vidkv_bench.cu against a device copy
#   verify  vidkv-verify-gpu.txt/json  kvq verify, the CUDA subject: "N passed, 0 failed",
#                                 no case skipped
#   inst    vidkv-inst.txt        thread instructions per element of every vk_ kernel (ncu)
#   all     every stage above
# A machine that stays warm keeps build/ between calls, so the stages may be split over calls
# (e.g. "build test", then "plant bench verify"); at most 8 files under $OUT in any call.
# env: KVQ_COMMIT, KVQ_SEED, KVQ_VIDKV_CASES, REPS, JOBS, PLANT_CASES (60: the planted runs'
#      random cases a kind); programs already in build/gpu/ are used as they are unless
#      VIDKV_BUILD is set.
# Exit status 0 when every stage run went as required; 1 otherwise.
set -u
OUT=${OUT:-/tmp/kvq-vidkv-out}
C=.devcarry
COMMIT=${KVQ_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); dev=${dev:-"no nvidia-smi"}
T=build/gpu/kvq_gpu_vidkv_test
B=build/gpu/kvq_vidkv_bench
S=build/gpu/libkvq_subject_gpu.so
P=build/gpu/kvq_gpu_vidkv_test_plant
stages=" ${*:-build test plant bench verify} "
case "$stages" in *" all "*) stages=" build test plant bench verify inst " ;; esac
for s in $stages; do
  case $s in build|test|plant|bench|verify|inst) ;; *) echo "device-vidkv: unknown stage '$s'" >&2; exit 2 ;; esac
done
want() { case "$stages" in *" $1 "*) return 0 ;; esac; return 1; }
rc=0

if want build; then
  if [ -x "$T" ] && [ -x "$B" ] && [ -f "$S" ] && [ -x "${P}5" ] && [ -z "${VIDKV_BUILD:-}" ]; then
    { echo "# programs already built on $dev; commit $COMMIT"; ldd "$T" | grep -i cufft; echo "make exit 0"; } \
        > "$OUT/vidkv-build.txt" 2>&1
  else
    { echo "# build on $dev; commit $COMMIT"; nvcc --version | tail -2
      make -j"${JOBS:-16}" "$T" "$B" "$S" gpu-vidkv-plant 2>&1 | grep -v 'ptxas info'; echo "make exit ${PIPESTATUS[0]}"; } \
        > "$OUT/vidkv-build.txt" 2>&1
  fi
  grep -q "make exit 0$" "$OUT/vidkv-build.txt" || { echo "device-vidkv: build failed (vidkv-build.txt)"; tail -20 "$OUT/vidkv-build.txt"; exit 1; }
  grep -q "libcufft.*not found" "$OUT/vidkv-build.txt" && { echo "device-vidkv: libcufft not found (vidkv-build.txt)"; exit 1; }
fi

if want test; then
  { echo "# gpu/reports/vidkv-gpu-test.txt -- gpu/vidkv/vidkv_test.cu on $dev; commit $COMMIT"
    timeout 60 "$T" --judge-selftest; echo "judge self-test exit $?"
    stdbuf -oL timeout 420 "$T"; echo "kvq_gpu_vidkv_test exit $?"
    # two more seeds, fewer cases a kind
    for sd in ${EXTRA_SEEDS:-0x5eed0001 0x5eed0002}; do
      echo "# KVQ_SEED=$sd KVQ_VIDKV_CASES=${EXTRA_CASES:-100}"
      KVQ_SEED=$sd KVQ_VIDKV_CASES=${EXTRA_CASES:-100} stdbuf -oL timeout 200 "$T"; echo "kvq_gpu_vidkv_test exit $?"
    done; } > "$OUT/vidkv-gpu-test.txt" 2>&1
  grep -q "judge self-test exit 0$" "$OUT/vidkv-gpu-test.txt" || rc=1
  # every run exits 0 and closes with passes and no failure
  [ "$(grep -c "^kvq_gpu_vidkv_test exit" "$OUT/vidkv-gpu-test.txt")" -eq \
    "$(grep -c "^kvq_gpu_vidkv_test exit 0$" "$OUT/vidkv-gpu-test.txt")" ] || rc=1
  grep -Eq "^[0-9]+ passed, [1-9][0-9]* failed$|^0 passed" "$OUT/vidkv-gpu-test.txt" && rc=1
  # on the device machine a skip is a failure: the test found no usable device
  grep -q "SKIPPED" "$OUT/vidkv-gpu-test.txt" && { echo "device-vidkv: the device test SKIPPED (no usable device)"; rc=1; }
  grep "^vidkv-gpu-test: \|passed, " "$OUT/vidkv-gpu-test.txt" | tail -8
fi

if want plant; then
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
  grep "^plant" "$OUT/vidkv-plant.txt"
fi

if want bench; then
  { timeout 240 "$B" --reps "${REPS:-30}" --json "$OUT/vidkv-bench.json" --commit "$COMMIT"
    echo "kvq_vidkv_bench exit $?"; } > "$OUT/vidkv-bench.txt" 2>&1
  grep -q "kvq_vidkv_bench exit 0$" "$OUT/vidkv-bench.txt" || rc=1
  grep -q "SKIPPED" "$OUT/vidkv-bench.txt" && rc=1
  grep "^V \|^K \|^copy\|exit" "$OUT/vidkv-bench.txt"
fi

if want verify; then
  # the GPU subject on the VIDKV standard vectors: every case answered and passed
  { echo "# gpu/reports/vidkv-verify-gpu.txt -- kvq verify of the CUDA subject on $dev; commit $COMMIT"
    if [ -x "$C/kvq" ]; then
      vd=$(mktemp -d)
      timeout 120 "$C/kvq" gen --family vidkv --level standard -o "$vd/vidkv-standard.vec"; echo "kvq gen exit $?"
      timeout 300 "$C/kvq" verify --vectors "$vd/vidkv-standard.vec" --subject "$S" --json "$OUT/vidkv-verify-gpu.json"
      echo "kvq verify exit $?"
      rm -rf "$vd"
    else
      echo "no $C/kvq carried: the verification did not run"
    fi; } > "$OUT/vidkv-verify-gpu.txt" 2>&1
  grep -q "kvq verify exit 0$" "$OUT/vidkv-verify-gpu.txt" || rc=1
  grep -Eq "^[1-9][0-9]* passed, 0 failed$" "$OUT/vidkv-verify-gpu.txt" || rc=1
  grep -qi "skipped" "$OUT/vidkv-verify-gpu.txt" && { echo "device-vidkv: kvq verify skipped cases"; rc=1; }
  grep -E "passed|exit|did not run" "$OUT/vidkv-verify-gpu.txt"
fi

if want inst; then
  if command -v ncu > /dev/null 2>&1; then
    # dynamic instruction counts (warp-level SASS instructions x 32 / elements of the small run)
    els=$("$B" --small --reps 1 | awk '/^elements/ { print $2 }')
    { echo "# gpu/reports/vidkv-inst.txt -- thread instructions per element, kvq_vidkv_bench --small on $dev; commit $COMMIT"
      echo "# elements $els; ncu metric smsp__thread_inst_executed.sum, summed per kernel over its launches"
      timeout 240 ncu --metrics smsp__thread_inst_executed.sum --csv -k regex:'vk_' "$B" --small --reps 1 2>/dev/null |
        awk -F'","' -v els="$els" 'NR > 1 && $0 ~ /thread_inst_executed/ { k = $5; v = $NF; gsub(/[",]/, "", v); s[k] += v }
          END { for (k in s) printf "%-40s %10.2f\n", k, s[k] / els }' | sort; } > "$OUT/vidkv-inst.txt" 2>&1
    cat "$OUT/vidkv-inst.txt"
  else
    echo "device-vidkv: no ncu on this machine (inst)"; rc=1
  fi
fi
exit $rc
