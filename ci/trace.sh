#!/usr/bin/env bash
# ci/trace.sh -- requirement traceability [TEST-REF-01].
# Lists the spec IDs that no test references, and fails if code or tests cite an
# ID that neither spec/ nor the register of assumptions (proofs/TRUSTED.md, its
# [TR-*] entries) defines.
set -euo pipefail
cd "$(dirname "$0")/.."
idre='\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+\]'
defined=$(grep -rhoE "$idre" spec | sort -u)
cited_tests=$(grep -rhoE "$idre" tests gpu/*_test.cu gpu/*/*_test.cu fuzz 2>/dev/null | sort -u)
cited_all=$(grep -rhoE "$idre" include ref conformance gpu tests fuzz 2>/dev/null | sort -u)
trusted=$(grep -hoE '^(###|\|) \[TR-[A-Z0-9-]+\]' proofs/TRUSTED.md | grep -oE "$idre" | sort -u)
known=$(printf '%s\n%s\n' "$defined" "$trusted" | sort -u)
undefined=$(comm -13 <(echo "$known") <(echo "$cited_all") || true)
untested=$(comm -23 <(echo "$defined") <(echo "$cited_tests") || true)
nd=$(echo "$defined" | grep -c . || true)
nt=$(echo "$untested" | grep -c . || true)
echo "trace: $nd requirement IDs in spec/, $((nd - nt)) referenced by tests, $nt not referenced:"
[ -n "$untested" ] && echo "$untested" | tr '\n' ' ' | fold -s -w 100 | sed 's/^/  /' && echo
if [ -n "$undefined" ]; then
  echo "trace: IDs cited in code or tests but defined neither in spec/ nor in proofs/TRUSTED.md:"
  echo "$undefined" | sed 's/^/  /'
  exit 1
fi
