# tests/lib.sh -- helpers of the end-to-end test scripts (sourced, not run).
# Each script sets T (its scratch folder); results are counted in pass/fail and
# reported by finish as the plain "N passed, N failed" closing line.
pass=0; fail=0

ok()  { pass=$((pass + 1)); echo "  ok   $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL $1"; }
# expect RC DESCRIPTION -- CMD...: run CMD, compare its exit status
expect() {
  local want=$1 what=$2; shift 3
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok "$what (exit $rc)"; else bad "$what: exit $rc, expected $want"; sed 's/^/      /' "$T/out" "$T/err" | head -20; fi
}
# grep_out PATTERN DESCRIPTION: the last command's stdout+stderr contains PATTERN
grep_out() {
  if cat "$T/out" "$T/err" | grep -Eq -- "$1"; then ok "$2"; else bad "$2: no match for '$1'"; sed 's/^/      /' "$T/out" "$T/err" | head -20; fi
}
# finish NAME: closing line and exit status
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
