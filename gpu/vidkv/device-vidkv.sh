#!/bin/bash
# device-vidkv.sh -- the VIDKV GPU checks on a device: build the device test, its planted-bug
# builds, the benchmark and the CUDA subject there (nvcc + cuFFT; they link ref/fast only, no
# MPFR), run the judge's self-test, the device test (exact parts bitwise against
# ref/fast/vidkv.c, STP included; the FFT path at the bounded level), the planted runs, the
# benchmark (256 MiB, medians of REPS) with the static instruction table of its kernels, the
# GPU subject's `kvq verify` on the VIDKV standard vectors (kvq and its MPFR/GMP libraries
# carried: .devcarry/kvq, .devcarry/lib/, as gpu/device-cert.sh carries them) and, on request,
# the instructions each kernel executes per element of a small run and each kernel's time in
# the full-size benchmark (ncu).
# usage: gpu/vidkv/device-vidkv.sh [STAGE...] [NAME=VALUE...]  (from the repository root; outputs under $OUT)
#   stages, in this order whatever the order given (default: build test plant bench verify):
#   build   vidkv-build.txt       the build of what the stages asked for need (the test, the
#                                 bench, the subject for verify, the planted builds for plant)
#   test    vidkv-gpu-test.txt    judge self-test, then the device test (KVQ_VIDKV_CASES random
#                                 cases a kind, then EXTRA_SEEDS with EXTRA_CASES a kind):
#                                 per-kind counts and "N passed, 0 failed", exit 0, each run
#   plant   vidkv-plant.txt       the device test over kernels with one planted bug each
#                                 (KVQ_VIDKV_PLANT = 1..10, gpu/vidkv/rules.mk): each must FAIL
#   bench   vidkv-bench.txt/json  gpu/vidkv/vidkv_bench.cu against a device copy, then the
#                                 static table of gpu/vidkv/sass_table.py (cuobjdump)
#   verify  vidkv-verify-gpu.txt/json  kvq verify, the CUDA subject: "N passed, 0 failed",
#                                 no case skipped
#   inst    vidkv-inst.txt        thread instructions per element of every vk_ kernel (ncu)
#   ktime   vidkv-ktime.txt       every vk_ kernel's time in the full-size benchmark (ncu,
#                                 gpu__time_duration, by kernel and grid; reps 1)
#   all     every stage above
#   NAME=VALUE sets the environment variable NAME (e.g. KVQ_VIDKV_CASES=100 REPS=15): the
#   device loop passes arguments only.
# The trimmed run of the device loop, within 180 s including the build (the build took
# 20 s on the H200 without the planted builds):
#   gpu/vidkv/device-vidkv.sh build test plant bench KVQ_VIDKV_CASES=40 EXTRA_SEEDS= \
#       PLANT_CASES=20 REPS=20 TEST_TIMEOUT=60 PLANT_TIMEOUT=15
# and, for the kernels' times and instruction counts (ncu), a second call:
#   gpu/vidkv/device-vidkv.sh build bench inst ktime REPS=15
# (each file says the seconds its stage took).  A machine that stays warm keeps build/
# between calls, so the stages may be split over calls; at most 8 files under $OUT in any call.
# env: KVQ_COMMIT, KVQ_SEED, KVQ_VIDKV_CASES, REPS, JOBS, PLANT_CASES (60: the planted runs'
#      random cases a kind), EXTRA_SEEDS, EXTRA_CASES, TEST_TIMEOUT, PLANT_TIMEOUT (seconds a
#      run of the device test, of a planted build); programs already in build/gpu/ are
#      used as they are unless VIDKV_BUILD is set.
# Exit status 0 when every stage run went as required; 1 otherwise (2: a bad argument).
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
PLANTS="1 2 3 4 5 6 7 8 9 10"
export PATH=$PATH:/usr/local/cuda/bin
st_args=
for a in "$@"; do
  case $a in
    *=*) n=${a%%=*}
              case $n in KVQ_SEED|KVQ_VIDKV_CASES|REPS|JOBS|PLANT_CASES|EXTRA_SEEDS|EXTRA_CASES|VIDKV_BUILD|TEST_TIMEOUT|PLANT_TIMEOUT) ;;
                *) echo "device-vidkv: unknown setting '$n' (argument '$a')" >&2; exit 2 ;; esac
              export "$a" ;;
    *) st_args="$st_args $a" ;;
  esac
done
stages=" ${st_args:-build test plant bench verify} "
case "$stages" in *" all "*) stages=" build test plant bench verify inst ktime " ;; esac
for s in $stages; do
  case $s in build|test|plant|bench|verify|inst|ktime) ;; *) echo "device-vidkv: unknown stage '$s'" >&2; exit 2 ;; esac
done
want() { case "$stages" in *" $1 "*) return 0 ;; esac; return 1; }
rc=0

if want build; then
  # what the stages asked for need
  need="$T"
  want bench && need="$need $B"
  want inst && need="$need $B"
  want ktime && need="$need $B"
  want verify && need="$need $S"
  want plant && need="$need $(for k in $PLANTS; do printf ' %s%s' "$P" "$k"; done)"
  missing=
  for x in $need; do [ -e "$x" ] || missing="$missing $x"; done
  if [ -z "$missing" ] && [ -z "${VIDKV_BUILD:-}" ]; then
    { echo "# programs already built on $dev; commit $COMMIT"; ldd "$T" | grep -i cufft; echo "make exit 0"; } \
        > "$OUT/vidkv-build.txt" 2>&1
  else
    { echo "# build on $dev; commit $COMMIT"; nvcc --version | tail -2
      make -j"${JOBS:-16}" $need 2>&1 | grep -v 'ptxas info'; echo "make exit ${PIPESTATUS[0]}"
      echo "# build: ${SECONDS} s"; } > "$OUT/vidkv-build.txt" 2>&1
  fi
  grep -q "make exit 0$" "$OUT/vidkv-build.txt" || { echo "device-vidkv: build failed (vidkv-build.txt)"; tail -20 "$OUT/vidkv-build.txt"; exit 1; }
  grep -q "libcufft.*not found" "$OUT/vidkv-build.txt" && { echo "device-vidkv: libcufft not found (vidkv-build.txt)"; exit 1; }
  echo "build: ${SECONDS} s"
fi

if want test; then
  t0=$SECONDS
  { echo "# gpu/reports/vidkv-gpu-test.txt -- gpu/vidkv/vidkv_test.cu on $dev; commit $COMMIT"
    timeout 60 "$T" --judge-selftest; echo "judge self-test exit $?"
    stdbuf -oL timeout "${TEST_TIMEOUT:-420}" "$T"; echo "kvq_gpu_vidkv_test exit $?"
    # two more seeds, fewer cases a kind
    for sd in ${EXTRA_SEEDS-0x5eed0001 0x5eed0002}; do
      echo "# KVQ_SEED=$sd KVQ_VIDKV_CASES=${EXTRA_CASES:-100}"
      KVQ_SEED=$sd KVQ_VIDKV_CASES=${EXTRA_CASES:-100} stdbuf -oL timeout 200 "$T"; echo "kvq_gpu_vidkv_test exit $?"
    done; t1=$SECONDS; echo "# test: $((t1 - t0)) s"; } > "$OUT/vidkv-gpu-test.txt" 2>&1
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
    t0=$SECONDS
    for k in $PLANTS; do
      KVQ_VIDKV_CASES=${PLANT_CASES:-60} stdbuf -oL timeout "${PLANT_TIMEOUT:-200}" "$P$k" > "$OUT/plant$k.log" 2>&1
      t=$?
      if [ $t -eq 1 ] && grep -q "^FAIL" "$OUT/plant$k.log"; then
        echo "plant $k: caught (exit 1; $(tail -1 "$OUT/plant$k.log"))"
      else
        echo "plant $k: NOT caught (exit $t; $(tail -1 "$OUT/plant$k.log"))"
      fi
      grep -m 2 "^FAIL" "$OUT/plant$k.log"
      rm -f "$OUT/plant$k.log"
    done; echo "# plant: $((SECONDS - t0)) s"; } > "$OUT/vidkv-plant.txt" 2>&1
  grep -q "NOT caught" "$OUT/vidkv-plant.txt" && rc=1
  [ "$(grep -c "^plant [0-9]*: caught" "$OUT/vidkv-plant.txt")" -eq "$(echo $PLANTS | wc -w)" ] || rc=1
  grep "^plant" "$OUT/vidkv-plant.txt"
fi

if want bench; then
  t0=$SECONDS
  { timeout 240 "$B" --reps "${REPS:-30}" --json "$OUT/vidkv-bench.json" --commit "$COMMIT"
    echo "kvq_vidkv_bench exit $?"
    # the static table: instructions per element and bytes in flight of the kernels timed above
    python3 gpu/vidkv/sass_table.py build/gpu || echo "sass_table exit $?"
    echo "# bench: $((SECONDS - t0)) s"; } > "$OUT/vidkv-bench.txt" 2>&1
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
      echo "# elements $els; ncu metric smsp__thread_inst_executed.sum: per launch (mean over a kernel's launches) / elements"
      echo "# (a kernel over the whole input: its instructions an element; launches: how many were averaged)"
      timeout $(( 175 - SECONDS > 20 ? 175 - SECONDS : 20 )) ncu --metrics smsp__thread_inst_executed.sum --csv -k regex:'vk_' "$B" --small --reps 1 2>/dev/null |
        awk -F'","' -v els="$els" 'NR > 1 && $0 ~ /thread_inst_executed/ { k = $5; v = $NF; gsub(/[",]/, "", v); s[k] += v; n[k]++ }
          END { for (k in s) printf "%-70s %10.2f  (%d launches)\n", substr(k, 1, 70), s[k] / n[k] / els, n[k] }' | sort; } > "$OUT/vidkv-inst.txt" 2>&1
    cat "$OUT/vidkv-inst.txt"
  else
    echo "device-vidkv: no ncu on this machine (inst)"; rc=1
  fi
fi
if want ktime; then
  if command -v ncu > /dev/null 2>&1; then
    # each vk_ kernel's duration in the full-size benchmark (one warm-up and one rep a
    # configuration), by kernel and grid: launches, median and total microseconds
    left=$((175 - SECONDS))
    if [ $left -lt 25 ]; then
      echo "# ktime not run: ${SECONDS} s used of the 180 s a device call has" > "$OUT/vidkv-ktime.txt"; rc=1
    else
    { echo "# gpu/reports/vidkv-ktime.txt -- vk_ kernel durations (ncu gpu__time_duration.sum), kvq_vidkv_bench --reps 1 on $dev; commit $COMMIT"
      timeout $left ncu --metrics gpu__time_duration.sum --csv -k regex:'vk_|Radix|Scan|fft' "$B" --reps 1 2> "$OUT/ncu.err" |
        python3 -c '
import csv, sys, statistics
rows = {}
rd = csv.reader(sys.stdin)
hdr = None
for r in rd:
    if hdr is None:
        if "Kernel Name" in r: hdr = r
        continue
    if len(r) != len(hdr): continue
    d = dict(zip(hdr, r))
    if d.get("Metric Name") != "gpu__time_duration.sum": continue
    v = float(d["Metric Value"].replace(",", ""))
    u = d.get("Metric Unit", "")
    v = v / 1000.0 if u in ("nsecond", "ns") else v * 1000.0 if u in ("msecond", "ms") else v
    k = (d["Kernel Name"].split("(")[0][:60], d.get("Grid Size", ""))
    rows.setdefault(k, []).append(v)
print("%-60s %-16s %5s %10s %10s" % ("kernel", "grid", "n", "median us", "total us"))
for k, v in sorted(rows.items(), key=lambda kv: -sum(kv[1])):
    print("%-60s %-16s %5d %10.2f %10.1f" % (k[0], k[1], len(v), statistics.median(v), sum(v)))
'
      echo "ncu exit ${PIPESTATUS[0]}"; tail -5 "$OUT/ncu.err"; rm -f "$OUT/ncu.err"
      echo "# ktime: $((SECONDS)) s since the start"; } > "$OUT/vidkv-ktime.txt" 2>&1
    fi
    head -30 "$OUT/vidkv-ktime.txt"
  else
    echo "device-vidkv: no ncu on this machine (ktime)"; rc=1
  fi
fi
echo "device-vidkv: ${SECONDS} s"
exit $rc
