#!/usr/bin/env bash
# tests/layout.sh BUILD -- the shape of the tree that lets one name find a
# family [FAM-LAYOUT-01], and the registry as the spec shows it [VER-REG-06]:
#   - spec/ops.md's table is what `kvq ops --markdown` prints, and
#     conformance/registry.json what `kvq ops --json` prints [VER-REG-12];
#   - every registered family has its spec, exact path, fast path, conformance
#     module, tests and kernels where the layout says;
#   - the fast path cannot include the MPFR path [FAM-LAYOUT-02];
#   - the conformance core names no family: only the registry line does
#     [VER-REG-01];
#   - ci/trace.sh --where finds a requirement's definition, code and tests
#     [TEST-TRACE-01].
set -u
B=${1:-build}
KVQ=$B/rel/kvq
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh

echo "== tests/layout.sh"
"$KVQ" ops --markdown > "$T/ops.md" 2>&1
sed -n '/<!-- BEGIN kvq ops --markdown -->/,/<!-- END kvq ops --markdown -->/p' spec/ops.md | sed '1d;$d' > "$T/spec-ops.md"
if [ -s "$T/ops.md" ] && diff -u "$T/spec-ops.md" "$T/ops.md" > "$T/diff"; then ok "spec/ops.md is kvq ops --markdown"
else bad "spec/ops.md differs from kvq ops --markdown (regenerate it)"; sed 's/^/      /' "$T/diff" | head -20; fi

# SPEC: [VER-REG-12] -- the registry description: the checked-in copy, which readers in
# other languages load, is what this kvq prints; BUILD/registry.json is the
# make rule's copy.
"$KVQ" ops --json > "$T/registry.json" 2>&1
if [ -s "$T/registry.json" ] && diff -u conformance/registry.json "$T/registry.json" > "$T/diff"; then
  ok "conformance/registry.json is kvq ops --json"
else
  bad "conformance/registry.json differs from kvq ops --json: the registry changed, regenerate the copy (make registry-json)"
  sed 's/^/      /' "$T/diff" | head -20
fi
if [ -e "$B/registry.json" ]; then
  cmp -s "$B/registry.json" "$T/registry.json" && ok "$B/registry.json is kvq ops --json" \
    || bad "$B/registry.json is not what kvq ops --json prints (stale: make $B/registry.json)"
fi
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/registry.json" 2>"$T/err"; then ok "kvq ops --json is JSON"
elif command -v python3 >/dev/null; then bad "kvq ops --json is not JSON: $(cat "$T/err" | tail -1)"; fi

fams=$("$KVQ" ops --families | awk '{print $1}')
[ "$fams" = "$("$KVQ" ops | awk '/^[a-z0-9_]+ \(/ {print $1}')" ] && ok "kvq ops --families lists kvq ops' families" \
  || bad "kvq ops --families and kvq ops disagree"
[ -n "$fams" ] && ok "kvq ops lists families: $(echo $fams)" || bad "kvq ops lists no family"
for f in $fams; do
  for p in "spec/$f.md" "ref/exact/$f.c" "ref/fast/$f.c" "conformance/families/$f.c" "tests/$f/check_$f.c"; do
    [ -e "$p" ] && ok "$f: $p" || bad "$f: $p missing"
  done
  # kernels where the family declares them ("gpu": true), and only then
  if grep -q "\"name\": \"$f\", \"title\": \"[^\"]*\", \"spec\": \"[^\"]*\", \"gpu\": true" "$T/registry.json"; then
    [ -d "gpu/$f" ] && ok "$f: gpu/$f (declares kernels)" || bad "$f: declares kernels (gpu) but gpu/$f is missing"
  else
    [ ! -e "gpu/$f" ] && ok "$f: no kernels, no gpu/$f" || bad "$f: gpu/$f exists but the family does not declare kernels (set .gpu = 1)"
  fi
done

# The fast path and what it includes never reach MPFR or the exact path.
for src in ref/common/*.c ref/fast/*.c; do
  deps=$(cc -MM -Iinclude "$src" 2>&1)
  if echo "$deps" | grep -Eq 'mpfr\.h|gmp\.h|kvq_exact\.h|ref/exact/'; then bad "$src includes the exact path: $(echo $deps | tr -s ' ' | cut -c1-200)"
  else ok "$src: no MPFR"; fi
done

# The core walks the registry; a family's name appears in its own module and
# in the registry line only.
core="conformance/vecio.c conformance/vecio.h conformance/verify.c conformance/subject.c
      conformance/gen.c conformance/kvq.c conformance/registry.h conformance/report.c
      conformance/rule.c conformance/rule.h conformance/regjson.c"
for f in $fams; do
  hits=$(grep -nwiE "$f|kvq_${f}_[a-z_]+|KVQ_OP_${f^^}[A-Z_]*" $core | grep -v '^[^:]*:[0-9]*: \*\|/\*' || true)
  [ -z "$hits" ] && ok "core names no '$f'" || { bad "core names '$f':"; echo "$hits" | sed 's/^/      /' | head -5; }
  n=$(grep -c "kvq_family_$f" conformance/registry.c)
  [ "$n" -ge 1 ] && ok "registry line for $f" || bad "no registry line for $f"
done
# ci/trace.sh --where [TEST-TRACE-01]: each line it prints found here on its own
# (grep), an ID defined nowhere fails, a prefix lists every ID of its family.
line=$(grep -n '^- \*\*merge\*\* \[VER-MERGE-01\]' spec/verify.md | cut -d: -f1)
tline=$(grep -n 'SPEC: .*\[VER-MERGE-01\]' tests/shards.sh | head -n1 | cut -d: -f1)
expect 0 "trace --where VER-MERGE-01" -- bash ci/trace.sh --where VER-MERGE-01
grep_out "^  defined      spec/verify.md:$line  - \*\*merge\*\* \[VER-MERGE-01\]" "its definition: spec/verify.md:$line"
grep_out "^  implemented  .*conformance/merge\.c:[0-9]" "its code: conformance/merge.c"
grep_out "^  tested       .*tests/shards\.sh:${tline}[;,]" "its test: tests/shards.sh:$tline"
expect 1 "trace --where an ID defined nowhere" -- bash ci/trace.sh --where VER-MERGE-99
grep_out "\[VER-MERGE-99\] is defined nowhere" "the undefined ID named"
expect 1 "trace --where a defined and an undefined ID" -- bash ci/trace.sh --where VER-MERGE-01 NOPE-01
grep_out "^\[VER-MERGE-01\]" "the defined one still listed"
tr=$(grep -m1 -oE '^### \[TR-[A-Z0-9-]+\]' proofs/TRUSTED.md | grep -oE 'TR-[A-Z0-9-]+')
trl=$(grep -n "^### \[$tr\]" proofs/TRUSTED.md | cut -d: -f1)
expect 0 "trace --where $tr (an assumption)" -- bash ci/trace.sh --where "[$tr]"
grep_out "^  defined      proofs/TRUSTED.md:$trl  ### \[$tr\]" "defined in proofs/TRUSTED.md:$trl"
want=$(grep -rhoE '\[SAGE-ATT-[[:digit:]]+\]' spec | sort -u)
expect 0 "trace --where SAGE-ATT (a prefix)" -- bash ci/trace.sh --where SAGE-ATT
got=$(grep -E '^\[' "$T/out" | sort)
[ -n "$want" ] && [ "$got" = "$want" ] && ok "the prefix lists the $(echo "$want" | wc -l) SAGE-ATT IDs of spec/" \
  || bad "the prefix lists $(echo $got), spec/ has $(echo $want)"
rl=$(grep -n '\[SAGE-ATT-01\.\.06\]' spec/vectors.md | head -n1 | cut -d: -f1)
expect 0 "trace --where SAGE-ATT-05" -- bash ci/trace.sh --where SAGE-ATT-05
grep_out "^  in spec      .*spec/vectors.md:([0-9]+,)*$rl\b" "a range citation (SAGE-ATT-01 to 06) counts for SAGE-ATT-05 (spec/vectors.md:$rl)"
expect 2 "trace --where without an ID" -- bash ci/trace.sh --where
# the untested IDs of --where over every spec ID are those the trace lists
ids=$(grep -rhoE '\[[[:upper:]][[:upper:][:digit:]]*(-[[:upper:][:digit:]]+)+\]' spec | sort -u)
bash ci/trace.sh --where $ids > "$T/where.txt" 2>&1
bash ci/trace.sh > "$T/trace.txt" 2>&1
a=$(awk '/^\[/ { id = $1 } /no test cites it/ { print id }' "$T/where.txt" | sort)
b=$(sed 1d "$T/trace.txt" | tr ' ' '\n' | grep . | sort)
[ "$(grep -c '^\[' "$T/where.txt")" -eq "$(echo "$ids" | wc -l)" ] && [ "$a" = "$b" ] \
  && ok "--where over all $(echo "$ids" | wc -l) spec IDs: the $(echo "$a" | grep -c .) untested are the trace's" \
  || { bad "--where and the trace disagree on the untested IDs"; diff <(echo "$a") <(echo "$b") | head -5 | sed 's/^/      /'; }

finish layout.sh
