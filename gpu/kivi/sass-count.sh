#!/bin/bash
# sass-count.sh -- static SASS instruction counts of the quantize and dequantize kernels
# [KIVI-DEV-03] (cuobjdump -sass of the toolkit on PATH).
# usage: gpu/kivi/sass-count.sh OBJ...      (make quant-sass runs it on the objects below)
# For each quantize or dequantize kernel of each object, one line:
#   all     every instruction of the kernel, its subroutines included (the exact division's)
#   body    the instructions up to its last EXIT: the kernel less its called subroutines
#   elems   the values a thread handles (the launch shapes of gpu/kivi/kivi.cu, gpu/sage/sage.cu)
#   /elem   body / elems
# On the objects built with KVQ_KIVI_HOTCOUNT=1 or KVQ_SAGE_HOTCOUNT=1 (the rare blocks compiled
# out: a subnormal or zero in a group, near ties, groups off the fast path, groups that can
# saturate), body is the straight path a thread of an ordinary group runs, loops unrolled: a
# static count, not a measurement.  An object whose name holds "base" is of the kernels of
# before (KVQ_KIVI_BASELINE, KVQ_SAGE_BASELINE): its dequantize-by-token kernel takes 8 values a
# thread, the current one 32.  The one-kernel dequantizers [KIVI-DEV-06] loop over their work
# items: their body is one item's (32 values a thread per token, G a group, 4G four groups)
# plus the check phase and the barrier, counted once.
set -u
command -v cuobjdump >/dev/null 2>&1 || { echo "sass-count: no cuobjdump on PATH" >&2; exit 2; }
for o in "$@"; do
    [ -f "$o" ] || { echo "sass-count: $o: no such object" >&2; exit 2; }
    dq=32
    case "$o" in *base*) dq=8 ;; esac
    printf "# %s\n%-44s %6s %6s %6s %7s\n" "$o" kernel all body elems /elem
    cuobjdump -sass "$o" | awk '
        /Function :/ { name = $3; n[name] = 0; last[name] = 0 }
        /^ +\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]+\*\/ / {
            n[name]++
            if ($0 ~ /EXIT/) last[name] = n[name]
        }
        END { for (k in n) print n[k], last[k], k }' | while read -r all body k; do
            d=$(echo "$k" | c++filt | sed 's/(.*//; s/^void //')
            case "$d" in
            kivi_quant_token_kernel*|kivi_quant_channel_kernel*|sage_qk_fast_kernel*) e=32 ;;
            kivi_dequant_token_kernel*) e=$dq ;;
            kivi_dequant_channel_kernel*) e=$(echo "$d" | sed 's/.*, *\([0-9]*\)>.*/\1/') ;;
            kivi_dequant_token_fused_kernel*) e=32 ;;     # a tile's loop body, phase 1 included
            kivi_dequant_channel_fused_kernel*) e=$(echo "$d" | sed 's/.*, *\([0-9]*\)>.*/\1/') ;;
            kivi_dequant_channel4_fused_kernel*) e=$(( 4 * $(echo "$d" | sed 's/.*, *\([0-9]*\)>.*/\1/') )) ;;
            *) continue ;;
            esac
            awk -v d="$d" -v a="$all" -v b="$body" -v e="$e" \
                'BEGIN { printf "%-44s %6d %6d %6d %7.1f\n", d, a, b, e, b / e }'
        done | sort
done
