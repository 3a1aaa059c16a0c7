#!/bin/bash
# device-gqa.sh -- the grouped-KV entry of the SAGE attention pipeline (kvq_cuda_sage_attn_gqa,
# spec/sage.md [SAGE-DEV-17]) judged and timed in one device call within 150 s; nothing is
# built here:
#   - carried from a build at this commit (stamp build/gpu/carried.commit): the attention
#     device test build/gpu/kvq_gpu_sage_attn_test and its planted build
#     kvq_gpu_sage_attn_test_gqaplant (both MPFR-linked; the plant's cores read KV head
#     h % kv_heads, the heads interleaved), and build/gpu/libkvq_sage_attn.so,
#   - from the start, in the background, the whole attention device test: the grouped
#     cases first (4 query heads on 2 and on 1 KV heads, 8 on 2, causal and not, partial
#     blocks, both cores, INT4; every intermediate byte for byte against ref/fast on its KV
#     head's K and V, the output the same bits as the call on K and V repeated, every
#     output within the bound; bad kv_heads refused), then the 23 standard cases; at most
#     ATT_S (default 90) s,
#   - meanwhile the planted build's grouped cases (--gqa, at most 30 s): must FAIL,
#   - then, alone on the device: kvq_gpu_sage_attn_test --gqa-bench SIZES REPS (default
#     8192,32768 and 5): 32 query heads on 8 KV heads, not causal, the grouped call against
#     the call on K and V repeated to the query heads -- outputs bit for bit, medians of
#     both and the stage split of each,
#   - with the time left (at least 30 s) and torch importable: gpu/sage/attn_bench.py at
#     N = 8192, 8 KV heads, batch 1, its kvq rows through the grouped entry (the row's
#     note says so), beside SDPA.
# Writes under $OUT: summary.txt, sage-attn-test.txt, gqa-plant.txt, gqa-bench.txt and, when
# run, sage-attn-bench.txt and .json.
# usage: gpu/sage/device-gqa.sh [SIZES [REPS]]   (env OUT, KVQ_COMMIT, ATT_S)
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/kvq-gqa-out}
COMMIT=${KVQ_COMMIT:-unknown}
SIZES=${1:-8192,32768}
REPS=${2:-5}
ATT_S=${ATT_S:-90}
B=build/gpu
mkdir -p "$OUT"
TAG=device-gqa
. gpu/sage/device-lib.sh    # say, el, stamped
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)
say "device $dev, commit $COMMIT"
export LD_LIBRARY_PATH=$PWD/.devcarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset KVQ_SAGE_STAGES KVQ_SAGE_STG_PLANT KVQ_SAGE_DS_SPLIT KVQ_SAGE_CORE KVQ_SAGE_FA3_SERIAL KVQ_SAGE_FA3_LEVEL KVQ_SAGE_VT
rc=0
for f in $B/kvq_gpu_sage_attn_test $B/kvq_gpu_sage_attn_test_gqaplant $B/libkvq_sage_attn.so; do
    stamped "$f" || { say "error: $f not carried at $COMMIT (stamp: $(cat $B/carried.commit 2>/dev/null))"; rc=1; }
done
if [ "$rc" != 0 ]; then
    say "finished in $(el) s, exit $rc"
    exit $rc
fi
say "carried, built at $(cat $B/carried.commit)"
( export OMP_NUM_THREADS=12
  { echo "# gpu/sage/attn_test.cu on $dev; commit $COMMIT (the grouped cases, then the standard ones); at most $ATT_S s"
    stdbuf -oL timeout "$ATT_S" $B/kvq_gpu_sage_attn_test
    echo "kvq_gpu_sage_attn_test exit $?"; } > "$OUT/sage-attn-test.txt" 2>&1 ) &
ATT=$!
{ echo "# kvq_gpu_sage_attn_test_gqaplant --gqa (the cores read KV head h % kv_heads): must FAIL; at most 30 s"
  OMP_NUM_THREADS=4 stdbuf -oL timeout 30 $B/kvq_gpu_sage_attn_test_gqaplant --gqa 2>&1 | grep -E "FAIL|gqa case|passed" | head -60
  echo "plant done"; } > "$OUT/gqa-plant.txt" 2>&1
np=$(grep -cE "FAIL grouped output vs the repeated call" "$OUT/gqa-plant.txt")
[ "$np" -gt 0 ] && say "planted build: $np FAIL lines on the grouped output against the repeated call's, as they must ($(grep -E '^[0-9]+ passed' "$OUT/gqa-plant.txt"))" ||
    { say "error: planted build: no grouped case failed"; rc=1; }
wait "$ATT"
say "attention device test (to $(el) s): $(grep -cE '^  gqa case' "$OUT/sage-attn-test.txt") grouped and $(grep -cE '^  case' "$OUT/sage-attn-test.txt") standard cases reported, $(tail -2 "$OUT/sage-attn-test.txt" | tr '\n' ' ')"
grep -E "^  gqa case" "$OUT/sage-attn-test.txt" >> "$OUT/summary.txt"
grep -E "^ *FAIL" "$OUT/sage-attn-test.txt" | head -6 >> "$OUT/summary.txt"
grep -q "exit 0$" "$OUT/sage-attn-test.txt" && grep -q " 0 failed" "$OUT/sage-attn-test.txt" || rc=1
# the timing, alone on the device
left=$(( 140 - $(el) ))
[ "$left" -gt 10 ] || left=10
{ echo "# kvq_gpu_sage_attn_test --gqa-bench $SIZES $REPS on $dev; commit $COMMIT; at most $left s"
  stdbuf -oL timeout "$left" $B/kvq_gpu_sage_attn_test --gqa-bench "$SIZES" "$REPS"
  echo "kvq_gpu_sage_attn_test --gqa-bench exit $?"; } > "$OUT/gqa-bench.txt" 2>&1
grep -q "gqa-bench exit 0$" "$OUT/gqa-bench.txt" || rc=1
grep -E "^gqa-bench|exit" "$OUT/gqa-bench.txt" >> "$OUT/summary.txt"
left=$(( 145 - $(el) ))
if [ "$left" -ge 30 ] && python3 -c "import torch" 2> /dev/null; then
    timeout -k 3 "$left" python3 gpu/sage/attn_bench.py --lib $B/libkvq_sage_attn.so --out "$OUT" --commit "$COMMIT" \
        --sizes 8192 --kv-heads 8 --reps 5 --row-budget 2 --no-loop --no-buffer0 --deadline $((left - 8)) \
        > /dev/null 2>&1
    say "attn_bench.py (N = 8192, 8 KV heads, to $(el) s): exit $?; its kvq rows: $(grep -cE 'grouped entry' "$OUT/sage-attn-bench.txt" 2>/dev/null) with the grouped entry's note"
else
    say "attn_bench.py not run ($left s left, or no torch)"
fi
say "finished in $(el) s, exit $rc"
exit $rc
