#!/bin/bash
# device-certsel.sh -- the paper variant's decode step [CERT-DEV-10] on a GPU machine
# without MPFR, side by side with an earlier commit's kernels, in at most 150 s of wall
# time (builds included: everything it runs is carried, nothing is compiled here unless
# missing).
#
# It runs, in this order (outputs under $OUT, six files):
#   1. kvq_gpu_cert_decode_test for KVQ_CERT_SECONDS (30) on a held-out seed (KVQ_SEED,
#      default from the clock; printed): both variants, both selectors and stagings, the
#      paper variant with and without the early segment pass compared bit for bit
#      [CERT-DEV-08]; the dumps it writes judged by `kvq cert`; then the build with a
#      planted bug (KVQ_CERT_PLANT=1) for PLANT_SECONDS (5), which must FAIL; then
#      `kvq verify` of the CERT standard vectors with the GPU subject  -> certsel-test.txt
#   2. the floor (kvq_cert_floor) and cert_bench.py at NS (32768,65536,131072),
#      sinks+clusters: SDPA, the paper variant with and without the early segment pass,
#      the sparse one, certification on and off, and the paper variant of the earlier
#      commit's kernels (build/gpu/libkvq_cert_bench_old.so, gpu/cert/bench-old.sh),
#      checked equal bit for bit                       -> cert-paper-bench.{json,txt}
#   3. with ncu on the PATH and time left: one step of each at n = 32768 and 131072 under
#      Nsight Compute (the earlier kernels: build/gpu/libkvq_cert_bench_ref.so when carried,
#      a second library of gpu/cert/bench-old.sh renamed, else the benchmark's), the
#      select, Phase-2 and combine kernels alone: duration, launch shape,
#      registers, occupancy limits, achieved occupancy, the busiest and the idlest
#      multiprocessor's active cycles, instructions, issue activity, spills (local
#      sectors), DRAM bytes and the warp stall reasons         -> certsel-ncu.txt
#   4. with build/gpu/libkvq_cert_timeline.so carried (make gpu-cert-timeline) and time
#      left: gpu/cert/cert_timeline.py --variant paper at n = 32768 and 131072, the select
#      kernel's stage boundaries in the paper variant's step  -> certsel-timeline.txt
#   and certsel-log.txt: the device, the commit, each part's exit and time, the floor's
#   table, the benchmark's log and the kernels' durations.
# The programs come in build/gpu/cert-carry.tar.gz (make gpu-cert-carry, with
# gpu/cert/bench-old.sh COMMIT first), the MPFR-linked decode tests among them;
# .devcarry/kvq is the CLI, .devcarry/lib/ libmpfr and libgmp.
# usage: gpu/cert/device-certsel.sh     env: KVQ_SEED, KVQ_CERT_SECONDS, PLANT_SECONDS,
#        NS, REPS (60), KVQ_COMMIT
set -u
C=.devcarry
B=build/gpu
OUT=${OUT:-/tmp/kvq-certsel-out}
mkdir -p "$OUT"
T=$(mktemp -d)
export LD_LIBRARY_PATH=$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LOG=$OUT/certsel-log.txt
SEED=${KVQ_SEED:-$(printf '0x%x' "$(date +%s%N | cut -c1-16)")}
T0=$(date +%s)
since() { echo $(( $(date +%s) - T0 )); }
{
    echo "# gpu/cert/device-certsel.sh; commit ${KVQ_COMMIT:-unknown}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
    echo "seed $SEED"
} > "$LOG"
rc=0
if [ -s "$B/cert-carry.tar.gz" ]; then
    tar -xzf "$B/cert-carry.tar.gz" >> "$LOG" 2>&1 || { echo "unpacking $B/cert-carry.tar.gz failed" >> "$LOG"; rc=1; }
else
    echo "no $B/cert-carry.tar.gz" >> "$LOG"
fi
for f in libkvq_subject_gpu.so libkvq_cert_bench.so kvq_cert_floor; do
    if [ ! -e "$B/$f" ]; then
        echo "building $B/$f (not carried)" >> "$LOG"
        make -j16 "$B/$f" >> "$LOG" 2>&1 || { echo "build of $B/$f failed" >> "$LOG"; rc=1; }
    fi
done
echo "[$(since) s] builds done" >> "$LOG"

# 1. the device check on a held-out seed, the planted bug, the vectors
TS=${KVQ_CERT_SECONDS:-30}
PS=${PLANT_SECONDS:-5}
{
    echo "# device check of the certified CERT decode step (gpu/cert/cert_decode_test.cu),"
    echo "# both variants; commit ${KVQ_COMMIT:-unknown}; KVQ_SEED=$SEED KVQ_CERT_SECONDS=$TS"
} > "$OUT/certsel-test.txt"
mkdir -p "$T/dumps"
KVQ_SEED=$SEED KVQ_CERT_SECONDS=$TS KVQ_CERT_DUMP_DIR="$T/dumps" \
    timeout $(( TS + 40 )) "$B/kvq_gpu_cert_decode_test" > "$T/test.txt" 2>&1
t=$?
{ grep -v "^gpu-cert-decode-test: step " "$T/test.txt" | tail -n 25; echo "kvq_gpu_cert_decode_test exit $t"; } >> "$OUT/certsel-test.txt"
[ $t -ne 0 ] && rc=1
if ls "$T"/dumps/*.dump > /dev/null 2>&1; then
    "$C/kvq" cert "$T"/dumps/*.dump > "$T/cert.txt" 2>&1
    t=$?
    { tail -n 3 "$T/cert.txt"; echo "kvq cert exit $t"; } >> "$OUT/certsel-test.txt"
    [ $t -ne 0 ] && rc=1
else
    echo "no dumps written" >> "$OUT/certsel-test.txt"
    rc=1
fi
echo "[$(since) s] device check done" >> "$LOG"
{
    echo "## planted bug (KVQ_CERT_PLANT=1: a segment recomputed after the selection keeps the"
    echo "## selected tokens); it must FAIL"
} >> "$OUT/certsel-test.txt"
KVQ_SEED=$SEED KVQ_CERT_SECONDS=$PS \
    timeout $(( PS + 30 )) "$B/kvq_gpu_cert_decode_test_plant" > "$T/plant.txt" 2>&1
t=$?
grep -v "^gpu-cert-decode-test: step " "$T/plant.txt" | tail -n 8 >> "$OUT/certsel-test.txt"
if [ $t -ne 0 ] && [ $t -ne 124 ] && grep -q "steps judged exactly" "$T/plant.txt"; then
    echo "planted bug caught: exit $t (expected nonzero)" >> "$OUT/certsel-test.txt"
else
    echo "planted bug NOT caught: exit $t" >> "$OUT/certsel-test.txt"
    rc=1
fi
echo "[$(since) s] planted-bug check done" >> "$LOG"
{
    echo "## kvq verify, the CERT family's standard vectors, the GPU subject ($B/libkvq_subject_gpu.so)"
    timeout 40 "$C/kvq" gen --family cert --level standard -o "$T/cert.vec" 2>&1 | tail -n 2
    echo "kvq gen exit ${PIPESTATUS[0]}"
    timeout 40 "$C/kvq" verify --vectors "$T/cert.vec" --subject "$B/libkvq_subject_gpu.so" 2>&1 | tail -n 4
    echo "kvq verify exit ${PIPESTATUS[0]}"
} >> "$OUT/certsel-test.txt"
grep -q "kvq verify exit 0" "$OUT/certsel-test.txt" || rc=1
echo "[$(since) s] verify done" >> "$LOG"

# 2. the floor, then the benchmark with it, side by side with the earlier kernels
timeout 30 "$B/kvq_cert_floor" --reps "${FLOOR_REPS:-20}" --json "$T/floor.json" \
    --commit "$(printf %s "${KVQ_COMMIT:-unknown}" | tr -c 'a-zA-Z0-9.-' '-')" > "$T/floor.txt" 2>&1
echo "kvq_cert_floor exit $?" >> "$T/floor.txt"
fl=""
[ -s "$T/floor.json" ] && fl="--floor $T/floor.json"
old=""
if [ -s "$B/libkvq_cert_bench_old.so" ]; then
    old="--lib-old $B/libkvq_cert_bench_old.so"
    export KVQ_COMMIT_OLD=$(cat "$B/libkvq_cert_bench_old.commit" 2>/dev/null || echo unknown)
fi
left=$(( 140 - $(date +%s) + T0 ))
[ $left -gt 60 ] && left=60
KVQ_COMMIT=${KVQ_COMMIT:-unknown} PYTHONUNBUFFERED=1 timeout $left python3 gpu/cert/cert_bench.py \
    "$B/libkvq_cert_bench.so" "$OUT/cert-paper-bench.json" --reps "${REPS:-60}" \
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

# 3. the select, Phase-2 and combine kernels alone at n = 32768 (informative)
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
M=$M,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps
M=$M,launch__waves_per_multiprocessor,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,smsp__inst_executed.sum
M=$M,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum
M=$M,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,dram__bytes_read.sum
for r in barrier long_scoreboard short_scoreboard wait mio_throttle lg_throttle math_pipe_throttle \
         no_instruction not_selected selected dispatch_stall branch_resolving membar sleeping drain; do
    M=$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
ref=$old
[ -s "$B/libkvq_cert_bench_ref.so" ] && ref="--lib-old $B/libkvq_cert_bench_ref.so ($(cat "$B/libkvq_cert_bench_ref.commit" 2>/dev/null))"
if command -v ncu > /dev/null 2>&1 && [ $(( $(date +%s) - T0 )) -lt 112 ]; then
    PYTHONUNBUFFERED=1 timeout $(( 136 - $(date +%s) + T0 )) ncu \
        --kernel-name regex:'cert_(select|phase2p|combine_p)' --metrics "$M" \
        --csv python3 gpu/cert/cert_bench.py "$B/libkvq_cert_bench.so" /dev/null --profile \
        --ns 32768,131072 --workloads sinks+clusters ${ref% (*} > "$T/ncu.csv" 2> "$T/ncu.err"
    t=$?
    if ! grep -q '^"ID"' "$T/ncu.csv" && [ $(( $(date +%s) - T0 )) -lt 126 ]; then
        # a metric this ncu does not know fails the whole call: the durations alone
        grep -v "^==PROF==" "$T/ncu.err" | tail -n 3 >> "$LOG"
        M=gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread
        PYTHONUNBUFFERED=1 timeout $(( 140 - $(date +%s) + T0 )) ncu \
            --kernel-name regex:'cert_(select|phase2p|combine_p)' --metrics "$M" \
            --csv python3 gpu/cert/cert_bench.py "$B/libkvq_cert_bench.so" /dev/null --profile \
            --ns 32768,131072 --workloads sinks+clusters ${ref% (*} > "$T/ncu.csv" 2> "$T/ncu.err"
        t=$?
    fi
    {
        echo "# gpu/cert/device-certsel.sh, part 3; commit ${KVQ_COMMIT:-unknown}; ncu exit $t"
        echo "# one step of each at n = 32768, then 131072, sinks+clusters, in launch order: the paper"
        echo "# variant with the early segment pass, without it, the sparse variant, the earlier"
        echo "# library's paper step ($ref); each kernel alone (Nsight Compute serialises them)"
        python3 - "$T/ncu.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if rows:
    h = rows[0]
    ii, ik, inm, iv, iu = (h.index(x) for x in ("ID", "Kernel Name", "Metric Name", "Metric Value", "Metric Unit"))
    order, got = [], {}
    for r in rows[1:]:
        if r[ii] not in got:
            order.append(r[ii])
            got[r[ii]] = (r[ik].split('(')[0], [])
        got[r[ii]][1].append((r[inm], r[iv], r[iu]))
    for i in order:
        name, ms = got[i]
        print(f"\n== {i} {name}")
        stalls = []
        for nm, v, u in ms:
            if nm.startswith("Stall") or "stalled" in nm:
                try:
                    short = nm.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", "")
                    stalls.append((float(v.replace(',', '')), short))
                except ValueError:
                    pass
                continue
            print(f"  {nm:62s} {v:>14s} {u}")
        stalls.sort(reverse=True)
        if stalls:
            print("  stalls (cycles an issued instruction, largest first): " +
                  ", ".join(f"{nm} {v:.2f}" for v, nm in stalls[:8]))
PY
        grep -v "^==PROF==" "$T/ncu.err" | tail -n 5
    } > "$OUT/certsel-ncu.txt" 2>&1
    echo "[$(since) s] ncu done (exit $t)" >> "$LOG"
else
    echo "## ncu: not run (not on the PATH, or past 112 s)" >> "$LOG"
fi
# 4. the select kernel's stages in the paper variant's step (the timeline build,
#     when carried; informative: its stamps add barriers of their own)
if [ -s "$B/libkvq_cert_timeline.so" ] && [ $(( $(date +%s) - T0 )) -lt 126 ]; then
    KVQ_COMMIT=${KVQ_COMMIT:-unknown} PYTHONUNBUFFERED=1 timeout $(( 147 - $(date +%s) + T0 )) python3 gpu/cert/cert_timeline.py \
        "$B/libkvq_cert_timeline.so" --variant paper --ns 32768,131072 --reps 5 --vtols -1 \
        > "$OUT/certsel-timeline.txt" 2>&1
    echo "cert_timeline.py exit $?" >> "$OUT/certsel-timeline.txt"
    echo "[$(since) s] timeline done" >> "$LOG"
else
    echo "## timeline: not run (no $B/libkvq_cert_timeline.so, or past 126 s)" >> "$LOG"
fi

echo "[$(since) s] exit $rc" >> "$LOG"
rm -rf "$T"
exit $rc
