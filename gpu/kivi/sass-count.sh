#!/bin/bash
# sass-count.sh -- static SASS instruction counts of the quantize and dequantize kernels
# (cuobjdump -sass; the device toolkit's or the one on PATH).
# usage: gpu/kivi/sass-count.sh OBJ...
# For each quantize or dequantize kernel of each object: its static instruction count, every
# path included (the rare ones: the exact division, the near-tie redo).
set -u
command -v cuobjdump >/dev/null 2>&1 || { echo "sass-count: no cuobjdump on PATH" >&2; exit 2; }
for o in "$@"; do
    [ -f "$o" ] || { echo "sass-count: $o: no such object" >&2; exit 2; }
    echo "# $o: kernel, static instructions"
    cuobjdump -sass "$o" | awk '
        /Function :/ { name = $3 }
        /^ +\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]+\*\/ / { n[name]++ }
        END { for (k in n) print n[k], k }' | while read -r n k; do
            printf "%7d %s\n" "$n" "$(echo "$k" | c++filt | sed 's/(.*//')"
        done | sort -k2 | grep -i "quant\|qk\|vcode\|dequant"
done
