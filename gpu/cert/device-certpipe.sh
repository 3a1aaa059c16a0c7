#!/bin/bash
# device-certpipe.sh -- the paper variant's Phase 2 with its early segment pass
# [CERT-DEV-10] on a GPU machine without MPFR, in at most 180 s of wall time.
#
# It runs, in this order (outputs under $OUT, six files):
#   1. kvq_gpu_cert_decode_test for KVQ_CERT_SECONDS (40) on a held-out seed
#      (KVQ_SEED, default from the clock; printed): both variants, both
#      selectors and stagings, the paper variant with and without the early
#      segment pass compared bit for bit [CERT-DEV-08]; the dumps it writes
#      judged by `kvq cert`                                 -> certpipe-test.txt
#   2. the same test over Phase 2 with a planted bug (a segment recomputed
#      after the selection keeps the selected tokens: KVQ_CERT_PLANT=1) for
#      PLANT_SECONDS (12); it must FAIL                     -> certpipe-plant.txt
#   3. `kvq gen --family cert --level standard` and `kvq verify` with the GPU
#      subject (its CERT entries run the device step)       -> certpipe-verify.txt
#   4. the floor (kvq_cert_floor) and cert_bench.py at NS (32768,65536,131072) on
#      the sinks+clusters workload: SDPA, the paper variant with and without
#      the early segment pass, the sparse one, certification on and off
#                                          -> cert-paper-bench.{json,txt}
#   and certpipe-log.txt: the device, the commit, each part's exit and time, the
#   floor's table and the benchmark's log.
# The MPFR-linked programs (the two decode tests) and the others (the GPU
# subject, the benchmark library, the floor) are built where MPFR is and
# carried in one file, build/gpu/cert-carry.tar.gz (make build/gpu/cert-carry.tar.gz),
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
    echo "# [CERT-DEV-10]; commit ${KVQ_COMMIT:-unknown}; KVQ_SEED=$SEED KVQ_CERT_SECONDS=${KVQ_CERT_SECONDS:-40}"
} > "$OUT/certpipe-test.txt"
mkdir -p "$T/dumps"
KVQ_SEED=$SEED KVQ_CERT_SECONDS=${KVQ_CERT_SECONDS:-40} KVQ_CERT_DUMP_DIR="$T/dumps" \
    timeout $(( ${KVQ_CERT_SECONDS:-40} + 45 )) "$B/kvq_gpu_cert_decode_test" >> "$OUT/certpipe-test.txt" 2>&1
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
KVQ_SEED=$SEED KVQ_CERT_SECONDS=${PLANT_SECONDS:-12} \
    timeout $(( ${PLANT_SECONDS:-12} + 30 )) "$B/kvq_gpu_cert_decode_test_plant" >> "$OUT/certpipe-plant.txt" 2>&1
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
KVQ_COMMIT=${KVQ_COMMIT:-unknown} PYTHONUNBUFFERED=1 timeout 90 python3 gpu/cert/cert_bench.py \
    "$B/libkvq_cert_bench.so" "$OUT/cert-paper-bench.json" --reps "${REPS:-100}" \
    --ns "${NS:-32768,65536,131072}" --workloads sinks+clusters $fl > "$T/bench.log" 2>&1
t=$?
echo "cert_bench.py exit $t" >> "$T/bench.log"
[ $t -ne 0 ] && rc=1
{
    echo "[$(since) s] bench done"
    echo "## floor"
    cat "$T/floor.txt"
    echo "## cert_bench.py"
    cat "$T/bench.log"
    echo "exit $rc"
} >> "$LOG"
rm -rf "$T"
exit $rc
