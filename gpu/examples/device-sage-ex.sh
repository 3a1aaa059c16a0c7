#!/bin/bash
# device-sage-ex.sh -- third-party attention kernels (torch SDPA in binary32, binary16 and
# bfloat16 with each backend pinned, SageAttention 1.0.6) on the sage-attn vectors, judged by
# kvq in results-file mode (gpu/examples/torch_sage.py, gpu/examples/README.md), in one device call.
#
# The GPU machine has torch and triton, no network and no MPFR: kvq is built elsewhere
# (make -j2 build/rel/kvq) and carried as .devcarry/kvq with .devcarry/lib/libmpfr.so.6 and
# libgmp.so.10; SageAttention is installed offline from
# .devcarry/wheels/sageattention-1.0.6-py3-none-any.whl (pip --target a private directory).
#
# For each seed (default: kvq's default seed and 0x2): kvq gen --family sage, level sets
# smoke and standard; every kernel of KERNELS writes a results file (torch_sage.py, up to
# JOBS at once: the cases are small); kvq verify --results --ops sage-attn,sage-mha judges each.
# Controls: SDPA in binary64 (sdpa-f64) must pass every case (else the harness or the judge
# is wrong); the same with a planted mistake must fail: the softmax scale 1/d instead of tau,
# or torch's top-left causal mask where the op's is bottom-right (run on the standard set
# only: the smoke set has no causal case with nq != nk, where the two differ).
#
# usage: gpu/examples/device-sage-ex.sh      (outputs under $OUT, at most 8 files)
#   sage-ex-summary.txt   device, versions, commit, seeds; per kernel, seed and level set
#                         `N passed, N failed, N skipped`, how close the passing cases came
#                         to their bounds, and the failing cases
#   sage-ex-verdicts.tar.gz  verdicts/<kernel>-<seed>-<set>.{json,txt} (kvq verify's JSON
#                         report and its text output)
#   sage-ex.log           everything the harness and kvq printed; device.txt (nvidia-smi)
#   env: KVQ_COMMIT (recorded), SEEDS ("default 0x2"; "default" is kvq's own), SETS
#        ("smoke standard"), KERNELS (names below, space-separated), JOBS (8), RUN_TIMEOUT
#        (seconds a harness run may take, 150), BUDGET (seconds after which no run starts,
#        420), KVQ (default .devcarry/kvq), DEVICE (the torch device, cuda; cpu runs the
#        SDPA kernels anywhere, sageattn then unavailable)
# Exit status: 0 every run gave a verdict, the binary64 control passed and both planted
# kernels failed; 1 otherwise (a third-party kernel's FAIL is a finding, reported in the
# summary, not an exit status); 2 kvq or kvq gen did not run.
set -u
C=.devcarry

# name -> torch_sage.py arguments
declare -A ARGS=(
  [sdpa-f32]="--kernel sdpa-f32"
  [sdpa-f32-math]="--kernel sdpa-f32 --backend math"
  [sdpa-f32-efficient]="--kernel sdpa-f32 --backend efficient"
  [sdpa-f32-mask]="--kernel sdpa-f32 --causal-align mask"
  [sdpa-f16]="--kernel sdpa-f16"
  [sdpa-f16-flash]="--kernel sdpa-f16 --backend flash"
  [sdpa-f16-efficient]="--kernel sdpa-f16 --backend efficient"
  [sdpa-f16-cudnn]="--kernel sdpa-f16 --backend cudnn"
  [sdpa-f16-math]="--kernel sdpa-f16 --backend math"
  [sdpa-bf16]="--kernel sdpa-bf16"
  [sdpa-bf16-flash]="--kernel sdpa-bf16 --backend flash"
  [sdpa-bf16-efficient]="--kernel sdpa-bf16 --backend efficient"
  [sdpa-bf16-cudnn]="--kernel sdpa-bf16 --backend cudnn"
  [sdpa-bf16-math]="--kernel sdpa-bf16 --backend math"
  [sdpa-f64]="--kernel sdpa-f64"
  [sageattn]="--kernel sageattn"
  [sageattn-f32]="--kernel sageattn-f32"
  [planted-scale-1-over-d]="--kernel sdpa-f64 --plant scale-1-over-d"
  [planted-causal-top-left]="--kernel sdpa-f64 --plant causal-top-left"
)
ORDER="sdpa-f32 sdpa-f32-math sdpa-f32-efficient sdpa-f32-mask sdpa-f16 sdpa-f16-flash \
sdpa-f16-efficient sdpa-f16-cudnn sdpa-f16-math sdpa-bf16 sdpa-bf16-flash sdpa-bf16-efficient \
sdpa-bf16-cudnn sdpa-bf16-math sdpa-f64 sageattn sageattn-f32 planted-scale-1-over-d \
planted-causal-top-left"
KERNELS=${KERNELS:-$ORDER}
for k in $KERNELS; do
  [ -n "${ARGS[$k]:-}" ] || { echo "device-sage-ex.sh: unknown kernel '$k' (known: $ORDER)" >&2; exit 2; }
done
OUT=${OUT:-/tmp/kvq-sage-ex-out}
mkdir -p "$OUT"
KVQ=${KVQ:-$C/kvq}
export LD_LIBRARY_PATH=$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/kvq-sage-ex.XXXXXX)
trap 'rm -rf "$W"' EXIT
LOG=$OUT/sage-ex.log
: > "$LOG"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
T0=$(date +%s)

SEEDS=${SEEDS:-default 0x2}
SETS=${SETS:-smoke standard}
JOBS=${JOBS:-8}

# SageAttention 1, offline, into a private site directory (no network on the device)
SITE=$W/site
WHL=$C/wheels/sageattention-1.0.6-py3-none-any.whl
mkdir -p "$SITE"
if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$WHL" >> "$LOG" 2>&1; then
  echo "sageattention installed from $WHL (pip --target $SITE)" >> "$LOG"
elif python3 -m zipfile -e "$WHL" "$SITE" >> "$LOG" 2>&1; then
  echo "sageattention unpacked from $WHL into $SITE (pip failed)" >> "$LOG"
else
  echo "sageattention could not be installed from $WHL: its results file will say unavailable" >> "$LOG"
fi
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
VERSIONS=$(python3 - 2>&1 <<'EOF'
import importlib.metadata as md
out = []
for name, mod in (("torch", "torch"), ("triton", "triton"), ("sageattention", None)):
    try:
        out.append("%s %s" % (name, md.version(name)))
    except Exception as e:
        out.append("%s: not installed (%s)" % (name, type(e).__name__))
try:
    import torch
    out.append("CUDA %s, cuDNN %s" % (torch.version.cuda, torch.backends.cudnn.version()))
except Exception as e:
    out.append("torch: %s" % e)
print(", ".join(out))
EOF
)
"$KVQ" version > "$W/kvq-version.txt" 2>&1 || { echo "device-sage-ex.sh: $KVQ does not run:" >&2; cat "$W/kvq-version.txt" >&2; exit 2; }

runs_on() {   # kernel set: whether the run can say something
  [ "$1" != planted-causal-top-left ] || [ "$2" != smoke ]   # no causal nq != nk case in smoke
}

run_one() {   # kernel seed set: harness, then verify: $W/verdicts/<k>-<seed>-<set>.{txt,json}
  local k=$1 s=$2 set=$3 tag=$1-$2-$3 rc
  local vec=$W/vec/sage-$s-$set.vec res=$W/res/$tag.results
  if [ $(( $(date +%s) - T0 )) -ge "${BUDGET:-420}" ]; then     # keep the whole call under 8 minutes
    echo "not run: the time budget (BUDGET=${BUDGET:-420} s) was spent" > "$W/verdicts/$tag.txt"
    echo "== $tag: not run (time budget)" > "$W/res/$tag.out"
    return
  fi
  # --no-digest: kvq verify checks the file's digest; pure Python would take seconds a run
  # shellcheck disable=SC2086
  timeout -k 10 "${RUN_TIMEOUT:-150}" python3 "$HERE/torch_sage.py" --vectors "$vec" -o "$res" ${ARGS[$k]} \
    --device "${DEVICE:-cuda}" --no-digest \
    > "$W/res/$tag.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$res" ]; then
    echo "$k $s $set: harness exit $rc, no verdict" > "$W/verdicts/$tag.txt"
  else
    "$KVQ" verify --vectors "$vec" --results "$res" --ops sage-attn,sage-mha --max-show 5 --quiet \
      --json "$W/verdicts/$tag.json" > "$W/verdicts/$tag.txt" 2>&1
  fi
  { echo "== $tag"; cat "$W/res/$tag.log" "$W/verdicts/$tag.txt"; } > "$W/res/$tag.out"
}

mkdir -p "$W/vec" "$W/res" "$W/verdicts"
SEEDNAMES=""
for s in $SEEDS; do
  for set in $SETS; do
    if [ "$s" = default ]; then
      "$KVQ" gen --family sage --level "$set" -o "$W/vec/sage-$s-$set.vec" --quiet >> "$LOG" 2>&1
    else
      "$KVQ" gen --family sage --level "$set" --seed "$s" -o "$W/vec/sage-$s-$set.vec" --quiet >> "$LOG" 2>&1
    fi || { echo "device-sage-ex.sh: kvq gen --level $set (seed $s) failed: see $LOG" >&2; exit 2; }
  done
  SEEDNAMES="$SEEDNAMES $s=$(awk '/^seed /{print $2; exit}' "$W/vec/sage-$s-${SETS%% *}.vec")"
done

# one sageattn run first and alone: its Triton kernels compile into the cache the others share
first=""
for k in $KERNELS; do
  case $k in sageattn*) first="$k ${SEEDS%% *} ${SETS%% *}"; break ;; esac
done
# shellcheck disable=SC2086
[ -z "$first" ] || run_one $first
n=0
for k in $KERNELS; do
  for s in $SEEDS; do
    for set in $SETS; do
      runs_on "$k" "$set" || continue
      [ "$k $s $set" != "$first" ] || continue
      run_one "$k" "$s" "$set" &
      n=$((n + 1))
      if [ $n -ge "$JOBS" ]; then wait -n; n=$((n - 1)); fi
    done
  done
done
wait
cat "$W"/res/*.out >> "$LOG"

# the summary
rc=0
S=$OUT/sage-ex-summary.txt
{
  echo "# gpu/examples/device-sage-ex.sh -- third-party attention kernels on the sage-attn vectors,"
  echo "# judged by kvq verify --results --ops sage-attn,sage-mha (spec/sage.md [SAGE-ATT-07], [SAGE-MHA-03])"
  echo "# device: $(cat "$OUT/device.txt")"
  echo "# $VERSIONS"
  echo "# kvq: $(cat "$W/kvq-version.txt"), commit ${KVQ_COMMIT:-unknown}"
  echo "# seeds:$SEEDNAMES; level sets: $SETS"
  echo
  echo "# closest pass: over the cases that passed, the largest distance from exact attention over"
  echo "# its bound that kvq verify records (1 would be on the bound; failed cases left out)"
  printf '%-26s %-8s %-9s %-36s %s\n' kernel seed set verdict "closest pass"
  for k in $KERNELS; do
    for s in $SEEDS; do
      for set in $SETS; do
        tag=$k-$s-$set
        if ! runs_on "$k" "$set"; then
          printf '%-26s %-8s %-9s %s\n' "$k" "$s" "$set" "not run: the set has no causal case with nq != nk"
          continue
        fi
        line=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$W/verdicts/$tag.txt" | tail -1)
        verdict=1
        [ -n "$line" ] || { line="no verdict: $(tail -1 "$W/verdicts/$tag.txt")"; rc=1; verdict=0; }
        worst=$(python3 - "$W/verdicts/$tag.json" 2>/dev/null <<'EOF'
import json, math, sys
r = [m["error"] / m["bound"] for c in json.load(open(sys.argv[1]))["cases"] if c.get("outcome") == "pass"
     for m in c.get("margins", [])
     if isinstance(m.get("error"), (int, float)) and isinstance(m.get("bound"), (int, float))
     and m["bound"] > 0 and math.isfinite(m["error"])]
print("%.3g" % max(r) if r else "-")
EOF
)
        printf '%-26s %-8s %-9s %-36s %s\n' "$k" "$s" "$set" "$line" "${worst:--}"
        [ $verdict = 1 ] && case $k in
          planted-*)
            if ! echo "$line" | grep -Eq ' [1-9][0-9]* failed'; then
              echo "  ^ a planted kernel did not fail: the judge missed it"; rc=1
            fi ;;
          sdpa-f64)
            if ! echo "$line" | grep -Eq '[1-9][0-9]* passed, 0 failed$'; then
              echo "  ^ the binary64 control did not pass every case: the harness or the judge is wrong"; rc=1
            fi ;;
        esac
      done
    done
  done
  echo
  echo "# failing cases (kvq verify's FAIL lines, first 5 a run)"
  for k in $KERNELS; do
    for s in $SEEDS; do
      for set in $SETS; do
        f=$W/verdicts/$k-$s-$set.txt
        if grep -q '^ *FAIL' "$f" 2>/dev/null; then
          echo "$k $s $set:"
          grep '^ *FAIL' "$f" | head -5 | cut -c1-400
        fi
      done
    done
  done
  echo
  echo "# elapsed $(( $(date +%s) - T0 )) s"
} > "$S"
cat "$S"
tar -czf "$OUT/sage-ex-verdicts.tar.gz" -C "$W" verdicts
exit $rc
