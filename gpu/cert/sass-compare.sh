#!/usr/bin/env bash
# gpu/cert/sass-compare.sh -- is a split of the CERT decode step a pure move?
# Builds the unsplit file and every unit of the split with the Makefile's
# NVFLAGS, plain and with -DKVQ_CERT_TIMELINE, and compares the SASS of each
# kernel (cuobjdump -sass, one `Function : <mangled name>` section a kernel).
#
# usage: gpu/cert/sass-compare.sh OLD.cu NEWDIR
#   OLD.cu  the unsplit unit, e.g. git show f9c5f5e:gpu/cert_decode.cu > /tmp/old.cu
#   NEWDIR  the split units: every NEWDIR/$UNITS is compiled (e.g. gpu/cert,
#           whose decode_*.cu are the step's units; units without kernels add
#           nothing)
#   env: NVCC (the Makefile's), CUOBJDUMP (cuobjdump on PATH; it needs nvdisasm
#        beside it or on PATH: where CUDA lacks them, PyPI's nvidia-cuda-cuobjdump
#        and nvidia-cuda-nvdisasm carry them), NVFLAGS (default: the Makefile's),
#        UNITS (glob under NEWDIR, default decode_*.cu), WORK (scratch, default a
#        mktemp dir; kept)
#
# Prints one row a kernel and build: the build (plain / timeline), the
# kernel's mangled name, the new unit that holds it, its instruction count
# (old), and `yes` when the old and new sections are identical line for line
# (addresses, instructions and their encodings), `yes*` when they are
# identical after the one normalisation below, `NO` otherwise; `missing` /
# `extra` when a kernel is in only one of the builds.
#
# Layout: runs of blanks are collapsed to one space in every line (cuobjdump
# pads its columns to the widest instruction of the whole dump, so the same
# function is laid out differently in a smaller file); nothing else.
#
# Normalisation (applied only when the sections differ, and reported): an
# operand c[0x4][OFF] -- constant bank 4, which holds the addresses of the
# unit's __device__ variables (the timeline's stamps), filled in when the
# module is loaded -- is replaced by the symbol that the object's relocations
# of .nv.constant4 place at OFF (c[0x4][RZ] is OFF 0), and the first encoding
# word of such an instruction (which carries OFF) is masked.  A unit that
# holds fewer of those variables places them at other offsets of bank 4; the
# instruction must still read the same variable's address.
#
# Exit status 0 when every kernel is `yes` or `yes*` in both builds.
set -u
[ $# -eq 2 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d' >&2; exit 2; }
OLD=$(realpath -- "$1")
NEWDIR=$(realpath -- "$2")
cd "$(dirname "$0")/../.." || exit 2
UNITS=${UNITS:-decode_*.cu}
NVCC=${NVCC:-$(make -s --no-print-directory -f Makefile -f - sass-compare-print-nvcc <<'EOF'
sass-compare-print-nvcc: ; @echo $(NVCC)
EOF
)}
NVFLAGS=${NVFLAGS:-$(make -s --no-print-directory -f Makefile -f - sass-compare-print-nvflags <<'EOF'
sass-compare-print-nvflags: ; @echo $(NVFLAGS)
EOF
)}
CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
WORK=${WORK:-$(mktemp -d)}
[ -f "$OLD" ] || { echo "sass-compare: no file $OLD" >&2; exit 2; }
[ -n "$NVCC" ] || { echo "sass-compare: no nvcc" >&2; exit 2; }
command -v "$CUOBJDUMP" > /dev/null || { echo "sass-compare: no cuobjdump ($CUOBJDUMP)" >&2; exit 2; }
shopt -s nullglob
# shellcheck disable=SC2206  # UNITS is a glob
units=("$NEWDIR"/$UNITS)
[ ${#units[@]} -gt 0 ] || { echo "sass-compare: no units $NEWDIR/$UNITS" >&2; exit 2; }

echo "# nvcc: $("$NVCC" --version | tail -1)"
echo "# cuobjdump: $("$CUOBJDUMP" --version | tail -1)"
echo "# NVFLAGS: $NVFLAGS"
echo "# old: $OLD; new: ${units[*]#"$PWD"/}"

# split_sass SASS DIR UNIT: one file a kernel, DIR/<mangled name>, and the
# name's unit in DIR/units
split_sass() {
    awk -v dir="$2" -v unit="$3" '
        /^[ \t]*Function : / { if (f) close(f); name = $3; f = dir "/" name;
                               print name, unit >> (dir "/units"); next }
        /^[ \t]*\.{5,}/     { if (f) close(f); f = ""; next }
        f != ""             { gsub(/[ \t]+/, " "); print >> f }
    ' "$1"
}

# bank4 OBJ: "OFF SYMBOL+ADDEND" for each relocation of .nv.constant4
bank4() {
    "$CUOBJDUMP" -elf "$1" 2> /dev/null | awk '
        /^\.section \.rela\.nv\.constant4/ { f = 1; next }
        f && NF == 0                         { f = 0 }
        f && $1 ~ /^0x/                      { print $1, $2 "+" $4 }'
}

# normalise FILE MAP: bank-4 operands as the symbols MAP places at their
# offsets, and their instructions' first encoding word masked
normalise() {
    awk -v map="$2" '
        BEGIN { while ((getline l < map) > 0) { split(l, a, " "); sym[a[1]] = a[2] } }
        /c\[0x4\]\[/ {
            while (match($0, /c\[0x4\]\[(RZ|0x[0-9a-f]+)\]/)) {
                off = substr($0, RSTART + 7, RLENGTH - 8);
                if (off == "RZ") off = "0x0";
                s = (off in sym) ? sym[off] : "?" off;
                $0 = substr($0, 1, RSTART - 1) "c[0x4][=" s "]" substr($0, RSTART + RLENGTH);
            }
            sub(/\/\* 0x[0-9a-f]+ \*\//, "/* (masked) */");
        }
        { print }' "$1"
}

fail=0
for build in plain timeline; do
    defs=""
    [ "$build" = timeline ] && defs="-DKVQ_CERT_TIMELINE"
    o=$WORK/$build
    rm -rf "$o"
    mkdir -p "$o/old" "$o/new"
    # shellcheck disable=SC2086
    "$NVCC" $NVFLAGS $defs -c "$OLD" -o "$o/old.o" || { echo "sass-compare: $OLD does not build" >&2; exit 2; }
    "$CUOBJDUMP" -sass "$o/old.o" > "$o/old.sass" || exit 2
    split_sass "$o/old.sass" "$o/old" "$(basename "$OLD")"
    bank4 "$o/old.o" > "$o/old.bank4"
    for u in "${units[@]}"; do
        b=$(basename "$u" .cu)
        # shellcheck disable=SC2086
        "$NVCC" $NVFLAGS $defs -c "$u" -o "$o/$b.o" || { echo "sass-compare: $u does not build" >&2; exit 2; }
        "$CUOBJDUMP" -sass "$o/$b.o" > "$o/$b.sass" || exit 2
        split_sass "$o/$b.sass" "$o/new" "$(basename "$u")"
        bank4 "$o/$b.o" > "$o/$b.bank4"
    done
    echo
    printf '%-9s %-100s %-20s %7s  %s\n' "# build" "kernel" "new unit" "instrs" "identical"
    nk=0
    nn=0
    for k in $(awk '{print $1}' "$o/old/units" | sort); do
        nk=$((nk + 1))
        n=$(grep -cE '^[[:space:]]+/\*[0-9a-f]{4,}\*/[[:space:]]+[^[:space:]]' "$o/old/$k")
        if [ ! -f "$o/new/$k" ]; then
            printf '%-9s %-100s %-20s %7s  %s\n' "$build" "$k" "-" "$n" "missing"
            fail=1
            continue
        fi
        if [ "$(grep -c "^$k " "$o/new/units")" -ne 1 ]; then
            where="(several)"
            fail=1
        else
            where=$(awk -v k="$k" '$1 == k {print $2}' "$o/new/units")
        fi
        if cmp -s "$o/old/$k" "$o/new/$k"; then
            same=yes
        elif cmp -s <(normalise "$o/old/$k" "$o/old.bank4") \
                    <(normalise "$o/new/$k" "$o/${where%.cu}.bank4"); then
            same="yes* ($(diff "$o/old/$k" "$o/new/$k" | grep -c '^<') instructions differ only in the bank-4 offset of the same symbol)"
            nn=$((nn + 1))
        else
            same="NO ($(diff <(normalise "$o/old/$k" "$o/old.bank4") \
                             <(normalise "$o/new/$k" "$o/${where%.cu}.bank4") | grep -c '^[<>]') lines differ)"
            fail=1
        fi
        printf '%-9s %-100s %-20s %7s  %s\n' "$build" "$k" "$where" "$n" "$same"
    done
    for k in $(awk '{print $1}' "$o/new/units" | sort -u); do
        if [ ! -f "$o/old/$k" ]; then
            printf '%-9s %-100s %-20s %7s  %s\n' "$build" "$k" "$(awk -v k="$k" '$1 == k {print $2; exit}' "$o/new/units")" "-" "extra"
            fail=1
        fi
    done
    echo "# $build: $nk kernels in the old unit; $nn identical only after the bank-4 normalisation"
done
echo
if [ $fail -eq 0 ]; then
    echo "# result: every kernel's SASS is identical (pure move)"
else
    echo "# result: DIFFERENCES (scratch in $WORK)"
fi
exit $fail
