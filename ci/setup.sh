#!/usr/bin/env bash
# ci/setup.sh -- install what kvq needs to build, test, prove, measure and fuzz.
#
# Target: Debian 12 (bookworm), network only to the package mirrors.  Idempotent:
# when every package is installed already it changes nothing (no apt-get update).
# Runs apt-get non-interactively, through sudo only when not root.  CUDA (nvcc,
# cuFFT) is expected on the machine already and is never installed here.
set -euo pipefail

# What each package is for:
#   build-essential pkg-config     C11 build (gcc, make), Check's flags
#   libmpfr-dev libgmp-dev         the exact path (ref/exact)
#   check                          unit tests (libcheck, pulls libsubunit-dev)
#   lcov                           make coverage (lcov, genhtml)
#   frama-c-base why3 z3 cvc4      make proofs (Frama-C WP and its provers)
#   gappa                          make proofs-gappa (part of make proofs): the
#                                  float facts of proofs/gappa/*.g
#   coq libcoq-flocq libcoq-interval
#                                  make coq (run by make proofs): the CERT
#                                  certificate theorems (proofs/coq/); coqc,
#                                  Flocq for the floating-point model
#   clang llvm libclang-rt-14-dev  make fuzz-smoke: clang -fsanitize=fuzzer; on
#                                  bookworm libFuzzer and the clang sanitizer
#                                  runtimes ship in libclang-rt-14-dev
#   parallel                       make test: the GNU parallel recipe of sharded
#                                  verification (ci/recipes/parallel-verify.sh)
#   (pip) nvidia-cutlass 4.2.0.0   CUTLASS/CuTe headers (below, not apt; pip --target)
#   slurm-wlm munge                make test-slurm: Slurm (slurmctld, slurmd, sbatch,
#                                  scontrol) and its credential daemon, for the
#                                  job-array recipe (ci/recipes/slurm-*.sbatch);
#                                  tests/slurm.sh starts its own single-node
#                                  cluster and stops it; the packages' services
#                                  are neither configured nor used
PKGS=(build-essential pkg-config libmpfr-dev libgmp-dev check lcov
      frama-c-base why3 z3 cvc4 gappa coq libcoq-flocq libcoq-interval
      clang llvm libclang-rt-14-dev parallel
      slurm-wlm munge)

say() { printf 'ci/setup.sh: %s\n' "$*"; }

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    say "error: dpkg-query/apt-get not found; this script targets Debian 12" >&2
    exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    say "all ${#PKGS[@]} packages already installed; nothing to do"
else
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo -n)   # never prompt: fail instead of hanging a CI job
    else
        say "error: not root and no sudo; missing: ${missing[*]}" >&2
        exit 1
    fi
    say "missing ${#missing[@]} of ${#PKGS[@]} packages: ${missing[*]}"
    say "running apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    say "running apt-get install ${missing[*]}"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends -o Dpkg::Options::=--force-confdef \
        -o Dpkg::Options::=--force-confold "${missing[@]}"
    say "installed: ${missing[*]}"
fi

# CUTLASS/CuTe C++ headers for the Hopper kernels built on CuTe (gpu/sage/wgmma_probe.cu,
# gpu/sage/qk_test.cu): the PyPI wheel nvidia-cutlass at a pinned version, without its
# Python dependencies (only the headers in cutlass_library/source/include are used),
# installed by pip --target into KVQ_DEPS (default ~/.local/share/kvq/python; the
# system's Python is left alone, which Debian 12 requires: PEP 668).  The Makefile finds
# it there (or anywhere python3 finds cutlass_library, or CUTLASS_INC=DIR).  A wheel
# file given in KVQ_CUTLASS_WHEEL (a machine without network) is installed instead.
CUTLASS_PIN=4.2.0.0
KVQ_DEPS=${KVQ_DEPS:-$HOME/.local/share/kvq/python}
cutlass_py() {
    PYTHONPATH="$KVQ_DEPS${PYTHONPATH:+:$PYTHONPATH}" python3 -c "$1" 2>/dev/null || true
}
cutlass_inc() {
    cutlass_py 'import importlib.util as u, os; s = u.find_spec("cutlass_library"); print(os.path.join(os.path.dirname(s.origin), "source", "include") if s and s.origin else "")'
}
have=$(cutlass_py 'import importlib.metadata as m; print(m.version("nvidia-cutlass"))')
if [ "$have" != "$CUTLASS_PIN" ]; then
    say "installing nvidia-cutlass==$CUTLASS_PIN into $KVQ_DEPS (have: ${have:-none})"
    mkdir -p "$KVQ_DEPS"
    python3 -m pip install -q --no-deps --upgrade --target "$KVQ_DEPS" \
        "${KVQ_CUTLASS_WHEEL:-nvidia-cutlass==$CUTLASS_PIN}" ||
        { say "error: pip install --target $KVQ_DEPS nvidia-cutlass==$CUTLASS_PIN failed" >&2; exit 1; }
fi

# Report the tools the build uses (a missing one is an error).
status=0
for t in gcc make pkg-config clang lcov genhtml frama-c why3 z3 cvc4 gappa coqc parallel slurmctld slurmd sbatch munged; do
    if ! command -v "$t" >/dev/null 2>&1; then
        say "error: $t not on PATH after install" >&2
        status=1
    fi
done
inc=$(cutlass_inc)
if [ -z "$inc" ] || [ ! -f "$inc/cute/tensor.hpp" ] || [ ! -f "$inc/cutlass/version.h" ]; then
    say "error: nvidia-cutlass installed but its headers (cutlass_library/source/include) not found" >&2; status=1
fi
if ! pkg-config --exists check; then say "error: pkg-config does not find check" >&2; status=1; fi
if command -v coqc >/dev/null 2>&1; then
    for lib in Flocq Interval Coquelicot; do
        [ -d "$(coqc -where)/user-contrib/$lib" ] || { say "error: coqc does not find the Coq library $lib" >&2; status=1; }
    done
fi
fuzzer_rt=$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null || true)
case "$fuzzer_rt" in
/*) [ -f "$fuzzer_rt" ] || { say "error: libFuzzer runtime missing ($fuzzer_rt)" >&2; status=1; } ;;
*) fuzzer_rt=$(find /usr/lib/llvm-*/lib/clang -name 'libclang_rt.fuzzer-x86_64.a' 2>/dev/null | head -n1)
   [ -n "$fuzzer_rt" ] || { say "error: libFuzzer runtime not found" >&2; status=1; } ;;
esac
if [ "$status" -eq 0 ]; then
    say "gcc $(gcc -dumpfullversion), $(clang --version | head -n1), check $(pkg-config --modversion check), lcov $(lcov --version | awk '{print $NF}'), mpfr $(dpkg-query -W -f='${Version}' libmpfr-dev)"
    say "$(coqc --version | head -n1), Flocq $(dpkg-query -W -f='${Version}' libcoq-flocq), Interval $(dpkg-query -W -f='${Version}' libcoq-interval)"
    say "$(slurmctld -V), $(munged --version 2>&1 | awk '{print $1; exit}'), $(parallel --version | head -n1)"
    say "libFuzzer: $fuzzer_rt"
    say "$(gappa --version 2>&1 | head -n1)"
    say "nvidia-cutlass $(cutlass_py 'import importlib.metadata as m; print(m.version("nvidia-cutlass"))'): CUTLASS/CuTe headers in $inc"
    if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
        say "nvcc present (not managed here)"
    else
        say "nvcc not found (GPU targets will be skipped; not installed here)"
    fi
fi
exit "$status"
