#!/bin/bash
# device-cert.sh -- run the certified decode step's device check, benchmark and
# per-kernel profile on a GPU machine that has no MPFR (spec/cert.md "The
# device kernel").
#
# The programs are built elsewhere (make gpu build/gpu/kvq_gpu_cert_decode_test
# gpu-cert-timeline) and carried in .devcarry/ (kvq_gpu_cert_decode_test,
# libkvq_cert_bench.so, libkvq_cert_timeline.so, kvq_cert_floor, kvq) with libmpfr.so.6 /
# libgmp.so.10 under .devcarry/lib/.
#
# usage: gpu/device-cert.sh test|bench|profile|timeline|floor|all ...   (outputs under $OUT)
#   test: cert-paper-test.txt (both step variants [CERT-VAR-01]); bench: the floor (cert_floor,
#   cert-decode-floor.*) then cert_bench.py with it: cert-paper-bench.{json,txt}
#   env: KVQ_CERT_STEPS (100000), KVQ_SEED, REPS (200), NS (8192,32768,65536,131072),
#        PROFILE_NS (32768,131072), TEST_TIMEOUT (seconds, 400), KVQ_COMMIT (the commit
#        the carried programs were built from; recorded in the reports)
set -u
C=.devcarry
OUT=${OUT:-/tmp/kvq-cert-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
rc=0
for what in "$@"; do
    if [ "$what" = test ] || [ "$what" = all ]; then
        mkdir -p "$OUT/dumps"
        {
            echo "# gpu/reports/cert-paper-test.txt -- device check of the certified CERT decode step,"
            echo "# both variants (paper: Phase 2 over every block [CERT-DEV-10]; sparse)"
            echo "# device: $(cat "$OUT/device.txt"); commit ${KVQ_COMMIT:-unknown}"
            echo "# every step judged by the exact MPFR path (kvq_exact_cert_check / _check_dense /"
            echo "# kvq_exact_cert_ladder / kvq_exact_cert_logmass), KVQ_CERT_STEPS=${KVQ_CERT_STEPS:-100000}"
            echo
        } > "$OUT/cert-paper-test.txt"
        KVQ_CERT_DUMP_DIR="$OUT/dumps" timeout "${TEST_TIMEOUT:-400}" "$C/kvq_gpu_cert_decode_test" \
            >> "$OUT/cert-paper-test.txt" 2>&1
        t=$?
        echo "kvq_gpu_cert_decode_test exit $t" >> "$OUT/cert-paper-test.txt"
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
        # the floor first (same device), then both variants against SDPA with it
        "$C/kvq_cert_floor" --reps "${FLOOR_REPS:-50}" --json "$OUT/cert-decode-floor.json" \
            --commit "$(printf %s "${KVQ_COMMIT:-unknown}" | tr -c 'a-zA-Z0-9.-' '-')" \
            > "$OUT/cert-decode-floor.txt" 2>&1 || rc=1
        fl=""
        [ -s "$OUT/cert-decode-floor.json" ] && fl="--floor $OUT/cert-decode-floor.json"
        KVQ_COMMIT=${KVQ_COMMIT:-unknown} PYTHONUNBUFFERED=1 python3 gpu/cert/cert_bench.py "$C/libkvq_cert_bench.so" "$OUT/cert-paper-bench.json" \
            --reps "${REPS:-200}" --ns "${NS:-8192,16384,32768,65536,131072}" $fl > "$OUT/cert-paper-bench.log" 2>&1
        t=$?
        echo "cert_bench.py exit $t" >> "$OUT/cert-paper-bench.log"
        [ $t -ne 0 ] && rc=1
    fi
    if [ "$what" = timeline ] || [ "$what" = all ]; then
        # stage boundaries of the step (the -DKVQ_CERT_TIMELINE build)
        KVQ_COMMIT=${KVQ_COMMIT:-unknown} python3 gpu/cert/cert_timeline.py "$C/libkvq_cert_timeline.so" \
            --ns "${PROFILE_NS:-32768,131072}" > "$OUT/cert-decode-timeline.txt" 2>&1
        t=$?
        [ $t -ne 0 ] && { echo "cert_timeline.py exit $t" >> "$OUT/cert-decode-timeline.txt"; rc=1; }
    fi
    if [ "$what" = floor ] || [ "$what" = all ]; then
        # what the device alone costs for the step's traffic and waits (gpu/cert/cert_floor.cu)
        {
            echo "# gpu/reports/cert-decode-floor.txt -- the device's own cost of the step's pieces"
            echo "# gpu/cert/cert_floor.cu (gpu/device-cert.sh floor)"
            "$C/kvq_cert_floor" --reps "${FLOOR_REPS:-50}" --json "$OUT/cert-decode-floor.json" \
                --commit "${KVQ_COMMIT:-unknown}"
            echo "kvq_cert_floor exit $?"
        } > "$OUT/cert-decode-floor.txt" 2>&1
        grep -q "kvq_cert_floor exit 0" "$OUT/cert-decode-floor.txt" || rc=1
    fi
    if [ "$what" = profile ] || [ "$what" = all ]; then
        # per-kernel durations (one step on, one off, per row) with Nsight Compute
        PYTHONUNBUFFERED=1 ncu --kernel-name regex:'cert_(phase1|select|phase2|combine)' \
            --metrics gpu__time_duration.sum --csv \
            python3 gpu/cert/cert_bench.py "$C/libkvq_cert_bench.so" /dev/null --profile \
            --ns "${PROFILE_NS:-32768,131072}" > "$OUT/cert-decode-profile.csv" 2> "$OUT/cert-decode-profile.err"
        t=$?
        echo "ncu exit $t" >> "$OUT/cert-decode-profile.err"
        [ $t -ne 0 ] && rc=1
    fi
done
exit $rc
