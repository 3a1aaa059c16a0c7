#!/bin/bash
# bench-old.sh -- build the benchmark library of an earlier commit's decode
# kernels, build/gpu/libkvq_cert_bench_old.so, so that gpu/cert/cert_bench.py
# --lib-old times them side by side with the current ones on the same tensors
# ([CERT-DEV-09]).  The commit's gpu/cert/decode_*.cu, decode_common.cuh,
# cert_bench.cu and gpu/kvq_cuda.h (git show) are compiled with this tree's
# quantizer and reference objects (make build/gpu/libkvq_cert_bench.so first).
# usage: gpu/cert/bench-old.sh COMMIT
set -eu
[ $# -eq 1 ] || { echo "usage: gpu/cert/bench-old.sh COMMIT" >&2; exit 2; }
C=$1
git rev-parse --verify -q "$C^{commit}" > /dev/null || { echo "bench-old.sh: no commit '$C'" >&2; exit 2; }
W=$(pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/gpu/cert"
for f in decode_annotate.cu decode_phase1.cu decode_phase2.cu decode_phase2p.cu decode_select.cu \
         decode_step.cu decode_common.cuh cert_bench.cu; do
    git show "$C:gpu/cert/$f" > "$T/gpu/cert/$f"
done
git show "$C:gpu/kvq_cuda.h" > "$T/gpu/kvq_cuda.h"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
F="-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -fmad=false -ftz=false -prec-div=true
   -prec-sqrt=true -Xcompiler -fPIC,-ffp-contract=off -I$T/gpu -I$W/include -I$W/conformance -I$W/gpu"
O=""
for u in decode_annotate decode_phase1 decode_phase2 decode_phase2p decode_select decode_step cert_bench; do
    $NVCC $F -c "$T/gpu/cert/$u.cu" -o "$T/$u.o"
    [ $u = cert_bench ] || O="$O $T/$u.o"
done
ld -r $O -o "$T/cert_decode.o"
B=$W/build/gpu
# the link of build/gpu/libkvq_cert_bench.so (make -n), with the commit's decode
# step and benchmark objects in place of this tree's
L=$(make -s -n -W gpu/cert/cert_bench.cu build/gpu/libkvq_cert_bench.so | grep -- ' -shared ' | tail -n 1)
[ -n "$L" ] || { echo "bench-old.sh: no link line for build/gpu/libkvq_cert_bench.so" >&2; exit 2; }
OBJ=""
for w in $L; do
    case "$w" in
        build/gpu/cert_decode.o) OBJ="$OBJ $T/cert_decode.o" ;;
        build/gpu/cert/cert_bench.o) OBJ="$OBJ $T/cert_bench.o" ;;
        build/*.o) OBJ="$OBJ $W/$w" ;;
    esac
done
$NVCC $F -shared $OBJ -o "$B/libkvq_cert_bench_old.so" -lm
git rev-parse --short "$C" > "$B/libkvq_cert_bench_old.commit"
echo "bench-old.sh: $B/libkvq_cert_bench_old.so from $(cat "$B/libkvq_cert_bench_old.commit")"
