#!/usr/bin/env bash
# ci/fuzz-smoke.sh BUILD -- short libFuzzer runs of every fuzz/fuzz_*.c harness.
#
# Each harness is built with clang -fsanitize=fuzzer,address,undefined and
# linked with the reference library sources (ref/common, ref/fast, ref/exact)
# plus conformance/vecio.c when it exists; a harness may name further sources
# in a comment line "FUZZ-SOURCES: conformance/gen.c ..." (paths from the
# repository root).  It then runs for KVQ_FUZZ_SECONDS (default 20) seconds on
# its corpus build/fuzz/<name>/corpus, seeded from fuzz/seeds/<name>/ when that
# folder exists.  Crash inputs land in build/fuzz/<name>/ as crash-*, leak-*,
# timeout-* or oom-*.  Exit status: non-zero if any harness failed to build or
# found a failure; every harness runs either way.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

B=${1:-build}
SECS=${KVQ_FUZZ_SECONDS:-20}
CC_FUZZ=${CC_FUZZ:-clang}
OUT="$B/fuzz"

if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
    echo "fuzz-smoke: $CC_FUZZ not found (run ci/setup.sh)" >&2
    exit 1
fi
case "$SECS" in ''|*[!0-9]*) echo "fuzz-smoke: KVQ_FUZZ_SECONDS=$SECS is not a number" >&2; exit 1 ;; esac

# shellcheck disable=SC2054  # the commas belong to -fsanitize=, not to the array
CFLAGS_FUZZ=(-std=c11 -g -O1 -Wall -Wextra -Werror -ffp-contract=off -fno-fast-math
             -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
             -fno-omit-frame-pointer -Iinclude -Iconformance -Itests -D_POSIX_C_SOURCE=200809L)
LIBS=(-lmpfr -lgmp -lm -ldl)

# the reference paths and the conformance core with every family module (the
# readers decode through the registry); not the kvq command's main
lib_src=(ref/common/*.c ref/fast/*.c ref/exact/*.c)
for s in conformance/*.c conformance/families/*.c; do
    [ "$s" = conformance/kvq.c ] || lib_src+=("$s")
done

shopt -s nullglob
harnesses=(fuzz/fuzz_*.c)
if [ "${#harnesses[@]}" -eq 0 ]; then
    echo "fuzz-smoke: no fuzz/fuzz_*.c harness found" >&2
    exit 1
fi

mkdir -p "$OUT"
failed=()
passed=()
for h in "${harnesses[@]}"; do
    name=$(basename "$h" .c)
    dir="$OUT/$name"
    mkdir -p "$dir/corpus"
    extra=()
    while read -r -a words; do
        extra+=("${words[@]}")
    done < <(sed -n 's/.*FUZZ-SOURCES:[[:space:]]*\([^*]*\).*/\1/p' "$h")
    srcs=("${lib_src[@]}")
    for s in "${extra[@]}"; do
        # a source listed twice would be linked twice
        case " ${srcs[*]} " in *" $s "*) ;; *) srcs+=("$s") ;; esac
    done
    echo "== fuzz-smoke: building $name"
    if ! "$CC_FUZZ" "${CFLAGS_FUZZ[@]}" "$h" "${srcs[@]}" -o "$dir/$name" "${LIBS[@]}"; then
        echo "== fuzz-smoke: $name: BUILD FAILED"
        failed+=("$name(build)")
        continue
    fi
    corpora=("$dir/corpus")
    [ -d "fuzz/seeds/$name" ] && corpora+=("fuzz/seeds/$name")
    echo "== fuzz-smoke: running $name for ${SECS}s (corpus $dir/corpus)"
    rc=0
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    timeout --signal=KILL $((SECS + 120)) \
        "$dir/$name" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$dir/" "${corpora[@]}" \
        >"$dir/run.log" 2>&1 || rc=$?
    tail -n 25 "$dir/run.log"
    if [ "$rc" -ne 0 ]; then
        echo "== fuzz-smoke: $name: FAILED (exit $rc); log $dir/run.log; artifacts:"
        for a in "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-*; do echo "   $a"; done
        failed+=("$name")
    else
        echo "== fuzz-smoke: $name: ok ($(find "$dir/corpus" -type f | wc -l) corpus inputs)"
        passed+=("$name")
    fi
done

echo "fuzz-smoke: ${#passed[@]} passed, ${#failed[@]} failed${failed[*]:+: ${failed[*]}}"
[ "${#failed[@]}" -eq 0 ]
