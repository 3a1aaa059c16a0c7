#!/usr/bin/env bash
# tests/run-suites.sh [--san] SUITE... -- run the Check suites two (or KVQ_JOBS)
# at a time, the longest first; each suite's output is printed whole, in the
# order the suites were given, after all have ended; exit 1 when any failed.
# --san: the ASan+UBSan environment of make test-san.
set -u
san=0
if [ "${1:-}" = "--san" ]; then san=1; shift; fi
jobs=${KVQ_JOBS:-$(nproc 2>/dev/null || echo 2)}
# Check's per-test limit (4 s by default) catches hangs, not slowness: a test
# group that sets no limit of its own gets 60 s, so that a loaded machine (two
# suites at a time, ASan) does not fail a correct test on time alone.
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
run() { # INDEX SUITE
  if [ $san = 1 ]; then
    KVQ_RANDOM_CASES=20000 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$2" > "$T/$1.out" 2>&1
  else
    "$2" > "$T/$1.out" 2>&1
  fi
  echo $? > "$T/$1.rc"
}
i=0
for s in "$@"; do
  # the CERT suite is the longest: start it first
  case "$s" in *check_cert) run $i "$s" & ;; esac
  i=$((i + 1))
done
i=0
for s in "$@"; do
  case "$s" in *check_cert) ;; *)
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    run $i "$s" & ;;
  esac
  i=$((i + 1))
done
wait
i=0; fail=0
for s in "$@"; do
  echo "== $s$([ $san = 1 ] && echo ' (ASan+UBSan)')"
  cat "$T/$i.out"
  [ "$(cat "$T/$i.rc")" = 0 ] || { fail=1; echo "== $s: exit $(cat "$T/$i.rc")"; }
  i=$((i + 1))
done
exit $fail
