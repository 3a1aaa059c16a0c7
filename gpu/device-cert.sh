#!/bin/bash
# device-cert.sh -- run the certified decode step's device check and benchmark
# on a GPU machine that has no MPFR (spec/cert.md "The device kernel").
#
# The programs are built elsewhere (make B=... gpu-test-cert's binary and
# libkvq_cert_bench.so) and carried in .devcarry/ with build/<b>/rel/kvq and
# libmpfr.so.6 / libgmp.so.10 under .devcarry/lib/.
#
# usage: gpu/device-cert.sh test|bench|all     (outputs under $OUT)
#   env: KVQ_CERT_STEPS (100000), KVQ_SEED, REPS (200), NS (8192,32768,65536,131072)
set -u
what=${1:-all}
C=.devcarry
OUT=${OUT:-/tmp/kvq-cert-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
rc=0
if [ "$what" = test ] || [ "$what" = all ]; then
    mkdir -p "$OUT/dumps"
    KVQ_CERT_DUMP_DIR="$OUT/dumps" "$C/kvq_gpu_cert_decode_test" > "$OUT/cert-decode-test.txt" 2>&1
    t=$?
    echo "kvq_gpu_cert_decode_test exit $t" >> "$OUT/cert-decode-test.txt"
    [ $t -ne 0 ] && rc=1
    if ls "$OUT"/dumps/*.dump > /dev/null 2>&1; then
        "$C/kvq" cert "$OUT"/dumps/*.dump --json "$OUT/cert-dumps.json" > "$OUT/kvq-cert.txt" 2>&1
        t=$?
        echo "kvq cert exit $t" >> "$OUT/kvq-cert.txt"
        [ $t -ne 0 ] && rc=1
    else
        echo "no dumps written" > "$OUT/kvq-cert.txt"
        rc=1
    fi
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    python3 gpu/cert_bench.py "$C/libkvq_cert_bench.so" "$OUT/cert-decode-bench.json" \
        --reps "${REPS:-200}" --ns "${NS:-8192,32768,65536,131072}" > "$OUT/cert-decode-bench.txt" 2>&1
    t=$?
    echo "cert_bench.py exit $t" >> "$OUT/cert-decode-bench.txt"
    [ $t -ne 0 ] && rc=1
fi
exit $rc
