#!/bin/bash
# device-certpipe.sh -- the paper variant's Phase 2 with its early segment pass
# [CERT-DEV-10] on a GPU machine without MPFR, in at most 180 s of wall time.
#
# It runs, in this order (outputs under $OUT, six files):
#   1. kvq_gpu_cert_decode_test for KVQ_CERT_SECONDS (30) on a held-out seed
#      (KVQ_SEED, default from the clock; printed): both variants, both
#      selectors and stagings, the paper variant with and without the early
#      segment pass compared bit for bit [CERT-DEV-08]; the dumps it writes
#      judged by `kvq cert`                                 -> certpipe-test.txt
#   2. the same test over Phase 2 with a planted bug (a segment recomputed
#      after the selection keeps the selected tokens: KVQ_CERT_PLANT=1) for
#      PLANT_SECONDS (8); it must FAIL                      -> certpipe-plant.txt
#   3. `kvq gen --family cert --level standard` and `kvq verify` with the GPU
#      subject (its CERT entries run the device step)       -> certpipe-verify.txt
#   4. the floor (kvq_cert_floor) and cert_bench.py at NS (32768,65536,131072) on
#      the sinks+clusters workload: SDPA, the paper variant with and without
#      the early segment pass, the sparse one, certification on and off, and
#      the paper variant of an earlier commit's kernels when
#      build/gpu/libkvq_cert_bench_old.so is there (gpu/cert/bench-old.sh)
#                                          -> cert-paper-bench.{json,txt}
#   5. with ncu on the PATH, one step of each at n = 32768 and 131072 under
#      Nsight Compute: every kernel's duration in isolation
#   and certpipe-log.txt: the device, the commit, each part's exit and time, the
#   floor's table, the benchmark's log and the kernels' durations.
# The MPFR-linked programs (the two decode tests) and the others (the GPU
# subject, the benchmark libraries, the floor) are built where MPFR is and
# carried in one file, build/gpu/cert-carry.tar.gz (make gpu-cert-carry),
# unpacked here; one that is missing is built here (make -j16), except the
# MPFR-linked ones.  .devcarry/kvq is the CLI, .devcarry/lib/ libmpfr and libgmp.
# usage: gpu/cert/device-certpipe.sh     env: KVQ_SEED, KVQ_CERT_SECONDS, PLANT_SECONDS,
#        NS, REPS (100), KVQ_COMMIT
set -u
C=.devcarry
B=build/gpu
OUT=${OUT:-/tmp/kvq-certpipe-out}
mkdir -p "$OUT"
T=$(mktemp -d)
export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LOG=$OUT/certpipe-log.txt
SEED=${KVQ_SEED:-$(printf '0x%x' "$(date +%s%N | cut -c1-16)")}
T0=$(date +%s)
since() { echo $(( $(date +%s) - T0 )); }
{
    echo "# gpu/cert/device-certpipe.sh; commit ${KVQ_COMMIT:-unknown}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
    echo "seed $SEED"
} > "$LOG"
rc=0
if [ -s "$B/cert-carry.tar.gz" ]; then
    tar -xzf "$B/cert-carry.tar.gz" >> "$LOG" 2>&1 || { echo "unpacking $B/cert-carry.tar.gz failed" >> "$LOG"; rc=1; }
fi
for f in libkvq_subject_gpu.so libkvq_cert_bench.so kvq_cert_floor; do
    if [ ! -e "$B/$f" ]; then
        echo "building $B/$f (not carried)" >> "$LOG"
        make -j16 "$B/$f" >> "$LOG" 2>&1 || { echo "build of $B/$f failed" >> "$LOG"; rc=1; }
    fi
done
echo "[$(since) s] builds done" >> "$LOG"

# 1. the device check on a held-out seed
{
    echo "# device check of the certified CERT decode step (gpu/cert/cert_decode_test.cu),"
    echo "# both variants; the paper variant's Phase 2 with and without its early segment pass"
    echo "# [CERT-DEV-10]; commit ${KVQ_COMMIT:-unknown}; KVQ_SEED=$SEED KVQ_CERT_SECONDS=${KVQ_CERT_SECONDS:-30}"
} > "$OUT/certpipe-test.txt"
mkdir -p "$T/dumps"
KVQ_SEED=$SEED KVQ_CERT_SECONDS=${KVQ_CERT_SECONDS:-30} KVQ_CERT_DUMP_DIR="$T/dumps" \
    timeout $(( ${KVQ_CERT_SECONDS:-30} + 45 )) "$B/kvq_gpu_cert_decode_test" >> "$OUT/certpipe-test.txt" 2>&1
t=$?
echo "kvq_gpu_cert_decode_test exit $t" >> "$OUT/certpipe-test.txt"
[ $t -ne 0 ] && rc=1
if ls "$T"/dumps/*.dump > /dev/null 2>&1; then
    "$C/kvq" cert "$T"/dumps/*.dump >> "$OUT/certpipe-test.txt" 2>&1
    t=$?
    echo "kvq cert exit $t" >> "$OUT/certpipe-test.txt"
    [ $t -ne 0 ] && rc=1
else
    echo "no dumps written" >> "$OUT/certpipe-test.txt"
    rc=1
fi
echo "[$(since) s] device check done" >> "$LOG"

# 2. the planted bug must be caught
{
    echo "# the device check over Phase 2 with a planted bug (KVQ_CERT_PLANT=1: a segment"
    echo "# recomputed after the selection keeps the selected tokens); it must FAIL"
} > "$OUT/certpipe-plant.txt"
KVQ_SEED=$SEED KVQ_CERT_SECONDS=${PLANT_SECONDS:-8} \
    timeout $(( ${PLANT_SECONDS:-8} + 30 )) "$B/kvq_gpu_cert_decode_test_plant" >> "$OUT/certpipe-plant.txt" 2>&1
t=$?
if [ $t -ne 0 ] && [ $t -ne 124 ] && grep -q "steps judged exactly" "$OUT/certpipe-plant.txt"; then
    echo "planted bug caught: exit $t (expected nonzero)" >> "$OUT/certpipe-plant.txt"
else
    echo "planted bug NOT caught: exit $t" >> "$OUT/certpipe-plant.txt"
    rc=1
fi
echo "[$(since) s] planted-bug check done" >> "$LOG"

# 3. the CERT vectors with the GPU subject
{
    echo "# kvq verify, the CERT family's standard vectors, the GPU subject ($B/libkvq_subject_gpu.so)"
    timeout 60 "$C/kvq" gen --family cert --level standard -o "$T/cert.vec" 2>&1
    echo "kvq gen exit $?"
    timeout 60 "$C/kvq" verify --vectors "$T/cert.vec" --subject "$B/libkvq_subject_gpu.so" 2>&1 | tail -n 30
    echo "kvq verify exit ${PIPESTATUS[0]}"
} > "$OUT/certpipe-verify.txt"
grep -q "kvq verify exit 0" "$OUT/certpipe-verify.txt" || rc=1
echo "[$(since) s] verify done" >> "$LOG"

# 4. the floor, then the benchmark with it
timeout 40 "$B/kvq_cert_floor" --reps "${FLOOR_REPS:-30}" --json "$T/floor.json" \
    --commit "$(printf %s "${KVQ_COMMIT:-unknown}" | tr -c 'a-zA-Z0-9.-' '-')" > "$T/floor.txt" 2>&1
echo "kvq_cert_floor exit $?" >> "$T/floor.txt"
fl=""
[ -s "$T/floor.json" ] && fl="--floor $T/floor.json"
old=""
if [ -s "$B/libkvq_cert_bench_old.so" ]; then
    old="--lib-old $B/libkvq_cert_bench_old.so"
    export KVQ_COMMIT_OLD=$(cat "$B/libkvq_cert_bench_old.commit" 2>/dev/null || echo unknown)
fi
KVQ_COMMIT=${KVQ_COMMIT:-unknown} PYTHONUNBUFFERED=1 timeout 90 python3 gpu/cert/cert_bench.py \
    "$B/libkvq_cert_bench.so" "$OUT/cert-paper-bench.json" --reps "${REPS:-100}" \
    --ns "${NS:-32768,65536,131072}" --workloads sinks+clusters $fl $old > "$T/bench.log" 2>&1
t=$?
echo "cert_bench.py exit $t" >> "$T/bench.log"
[ $t -ne 0 ] && rc=1
{
    echo "[$(since) s] bench done"
    echo "## floor"
    cat "$T/floor.txt"
    echo "## cert_bench.py"
    cat "$T/bench.log"
} >> "$LOG"

# 5. each kernel alone (Nsight Compute serialises them: no overlap), informative
if command -v ncu > /dev/null 2>&1 && [ $(( $(date +%s) - T0 )) -lt 120 ]; then
    PYTHONUNBUFFERED=1 timeout $(( 170 - $(date +%s) + T0 )) ncu --kernel-name regex:'cert_(phase1|select|phase2|combine)' \
        --metrics gpu__time_duration.sum --csv python3 gpu/cert/cert_bench.py "$B/libkvq_cert_bench.so" \
        /dev/null --profile --ns 32768,131072 --workloads sinks+clusters $old > "$T/prof.csv" 2> "$T/prof.err"
    t=$?
    {
        echo "## ncu (exit $t): each kernel's duration alone, in launch order; a row's steps:"
        echo "## paper with the early pass, paper without it, sparse, the old library's paper"
        python3 - "$T/prof.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if rows:
    h = rows[0]
    ik, ig, iv, iu = (h.index(x) for x in ("Kernel Name", "Grid Size", "Metric Value", "Metric Unit"))
    for r in rows[1:]:
        print(f"{r[ik].split('(')[0][:34]:34s} grid {r[ig]:>14s} {r[iv]:>10s} {r[iu]}")
PY
        grep -v "^==PROF==" "$T/prof.err" | tail -n 5
    } >> "$LOG" 2>&1
else
    echo "## ncu: not run (not on the PATH, or past 120 s)" >> "$LOG"
fi
echo "[$(since) s] exit $rc" >> "$LOG"
rm -rf "$T"
exit $rc
