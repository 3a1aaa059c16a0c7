#!/bin/bash
# device-attn-bench.sh -- the SageAttention2 attention benchmark in one device call:
# gpu/sage/attn_bench.py runs kvq_cuda_sage_attn (libkvq_sage_attn.so, built elsewhere
# with `make gpu` and carried as build/gpu/libkvq_sage_attn.so or
# .devcarry/sage/libkvq_sage_attn.so), torch SDPA (flash, cuDNN, efficient backends) and
# SageAttention 1 (the wheel .devcarry/wheels/sageattention-1.0.6-py3-none-any.whl,
# installed here offline) side by side, N = 4096..32768, causal and not.
# usage: gpu/sage/device-attn-bench.sh [attn_bench.py options, e.g. --quick]
#   outputs under $OUT: sage-attn-bench.{json,txt}, sage-attn-bench.log, device.txt
#   env: KVQ_COMMIT (recorded in the reports), REPS (20), SIZES (4096,8192,16384,32768),
#        LIB (the library; default: attn_bench.py's choice), TIMEOUT (seconds, 510)
set -u
C=.devcarry
OUT=${OUT:-/tmp/kvq-sage-attn-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1
LOG=$OUT/sage-attn-bench.log
: > "$LOG"

# SageAttention 1, offline, into a private site directory (no network on the device)
SITE=/tmp/kvq-sage-site
WHL=$C/wheels/sageattention-1.0.6-py3-none-any.whl
rm -rf "$SITE"
mkdir -p "$SITE"
if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$WHL" >> "$LOG" 2>&1; then
    echo "sageattention installed from $WHL (pip --target $SITE)" >> "$LOG"
elif python3 -m zipfile -e "$WHL" "$SITE" >> "$LOG" 2>&1; then
    echo "sageattention unpacked from $WHL into $SITE (pip failed)" >> "$LOG"
else
    echo "sageattention could not be installed from $WHL: its rows will read unavailable" >> "$LOG"
fi
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1

T=${TIMEOUT:-510}
args=(--out "$OUT" --commit "${KVQ_COMMIT:-unknown}" --reps "${REPS:-20}"
      --sizes "${SIZES:-4096,8192,16384,32768}" --deadline $((T - 15)))
[ -n "${LIB:-}" ] && args+=(--lib "$LIB")
set -o pipefail
timeout -k 10 "$T" python3 gpu/sage/attn_bench.py "${args[@]}" "$@" 2>&1 | tee -a "$LOG"
rc=$?
echo "attn_bench.py exit $rc" | tee -a "$LOG"
exit $rc
