#!/usr/bin/env bash
# ci/coverage.sh BUILD -- line coverage of ref/ (gate: 90%), run by `make coverage`.
#
# Expects the cov variant (--coverage -O0) built under BUILD/cov: the test
# programs BUILD/cov/tests/check_* and the tool BUILD/cov/kvq.  Resets the
# counters, runs the unit tests (KVQ_RANDOM_CASES reduced: coverage needs
# breadth, not volume) and the kvq tool on the smoke vectors, captures with
# lcov, keeps ref/ (gated) and reports conformance/ and include/ separately,
# writes the HTML report to BUILD/coverage/ and exits non-zero when a program
# fails or ref/ line coverage is below KVQ_COV_MIN (default 90) percent.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

B=${1:-build}
MIN=${KVQ_COV_MIN:-90}
CASES=${KVQ_COV_RANDOM_CASES:-8000}
COV="$B/cov"
OUT="$B/coverage"
ROOT=$(pwd)
LCOV=(lcov --quiet --rc lcov_branch_coverage=0)
# lcov 1.16 on Debian prints harmless "Subroutine ... redefined" perl warnings.
lcov_() { "${LCOV[@]}" "$@" 2> >(grep -v '^Subroutine .* redefined at ' >&2); }

for t in lcov genhtml gcov; do
    command -v "$t" >/dev/null 2>&1 || { echo "coverage: $t not found (run ci/setup.sh)" >&2; exit 1; }
done
if [ ! -d "$COV" ]; then
    echo "coverage: $COV not found; build it with 'make coverage'" >&2
    exit 1
fi

rm -rf "$OUT"
mkdir -p "$OUT"

# 1. Counters to zero, and a baseline so that never-run files count as 0%.
lcov_ --zerocounters --directory "$COV"
lcov_ --capture --initial --directory "$COV" --base-directory "$ROOT" \
    --output-file "$OUT/base.info"

# 2. The programs.  A skipped one is reported, never counted as run.
ran=0
skipped=()
run() {
    echo "== coverage: $*"
    "$@"
    ran=$((ran + 1))
}
# Every Check suite the Makefile lists (TESTS), so a new family's code in ref/
# is measured by its own tests.
for t in $(make -s -C "$ROOT" --no-print-directory print-tests); do
    if [ -x "$COV/tests/$t" ]; then
        run env KVQ_RANDOM_CASES="$CASES" "$COV/tests/$t"
    else
        skipped+=("$COV/tests/$t")
    fi
done
if [ -x "$COV/kvq" ]; then
    run "$COV/kvq" gen --family kivi --level smoke -o "$OUT/smoke-kivi.vec"
    run "$COV/kvq" verify --vectors "$OUT/smoke-kivi.vec" --subject ref-fast
else
    skipped+=("$COV/kvq")
fi

# 3. Capture, split by tree, report.
lcov_ --capture --directory "$COV" --base-directory "$ROOT" --output-file "$OUT/run.info"
lcov_ --add-tracefile "$OUT/base.info" --add-tracefile "$OUT/run.info" \
    --output-file "$OUT/all.info"
lcov_ --extract "$OUT/all.info" "$ROOT/ref/*" --output-file "$OUT/ref.info"
lcov_ --extract "$OUT/all.info" "$ROOT/conformance/*" --output-file "$OUT/conformance.info" \
    2>/dev/null || : >"$OUT/conformance.info"
lcov_ --extract "$OUT/all.info" "$ROOT/include/*" --output-file "$OUT/include.info" \
    2>/dev/null || : >"$OUT/include.info"
parts=(--add-tracefile "$OUT/ref.info")
for tree in conformance include; do
    [ -s "$OUT/$tree.info" ] && parts+=(--add-tracefile "$OUT/$tree.info")
done
lcov_ "${parts[@]}" --output-file "$OUT/report.info"
genhtml --quiet --title "kvq coverage" --prefix "$ROOT" --output-directory "$OUT" \
    "$OUT/report.info"

# Lines found/hit straight from the tracefile (LF/LH records): no parsing of
# formatted percentages.
lines() { # tracefile -> "hit found"
    awk -F: '/^LF:/ { f += $2 } /^LH:/ { h += $2 } END { printf "%d %d\n", h, f }' "$1"
}
pct() { # hit found -> percentage with one decimal
    awk -v h="$1" -v f="$2" 'BEGIN { if (f == 0) print "n/a"; else printf "%.1f%%\n", 100 * h / f }'
}
echo "coverage: per-file lines of ref/:"
awk -F: -v root="$ROOT/" '/^SF:/ { sf = substr($0, 4) } /^LF:/ { f = $2 } /^LH:/ { h = $2 }
    /^end_of_record/ { if (index(sf, root) == 1) sf = substr(sf, length(root) + 1);
                       printf "   %-24s %5.1f%% (%d of %d)\n", sf, f ? 100 * h / f : 0, h, f }' \
    "$OUT/ref.info"
for tree in conformance include; do
    if [ -s "$OUT/$tree.info" ]; then
        read -r h f < <(lines "$OUT/$tree.info")
        echo "coverage: $tree/ lines $(pct "$h" "$f") ($h of $f) -- reported, not gated"
    fi
done
read -r h f < <(lines "$OUT/ref.info")
echo "coverage: ran $ran program(s); skipped ${#skipped[@]}${skipped[*]:+: ${skipped[*]}}"
echo "coverage: HTML report in $OUT/index.html"
echo "coverage: ref/ lines $(pct "$h" "$f") ($h of $f), gate ${MIN}%"
if [ "$f" -eq 0 ]; then
    echo "coverage: FAIL: no ref/ lines found (was $COV built with --coverage?)" >&2
    exit 1
fi
if [ $((h * 100)) -lt $((f * MIN)) ]; then
    echo "coverage: FAIL: ref/ line coverage below ${MIN}%" >&2
    exit 1
fi
if [ "${#skipped[@]}" -ne 0 ]; then
    echo "coverage: FAIL: ${#skipped[@]} program(s) missing (SKIP is not a pass)" >&2
    exit 1
fi
echo "coverage: PASS"
