#!/usr/bin/env bash
# tests/vectors.sh BUILD -- end-to-end tests of the kvq command: determinism and
# sharding of gen, the bundled subject passing, the deliberately wrong subjects
# failing, the legal-freedom subject passing the bounded level only, crash /
# hang / unavailable subjects as verdicts, results-file mode, and malformed
# input rejected with file and line.  SPEC: [VEC-GEN-01] [VER-EXIT-01]
# [VER-RUN-01] [VER-RUN-02] [VER-RUN-04] [VER-CLI-02] [VER-CLI-03] [VER-CLI-04] [VER-ST-01]
# [VER-CASE-02] [VER-OUT-01] [TEST-NEG-01] [TEST-SKIP-01] [TEST-REF-01] [POL-TIE-01] [LAY-PACK-01] [KIVI-B-02]
set -u
B=${1:-build}
KVQ=$B/san/kvq          # ASan+UBSan build for the quick checks
KVQR=$B/rel/kvq         # plain build for the standard level
SUBJ=$B/subjects
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"

echo "== tests/vectors.sh"
# gen: deterministic, sharding partitions the cases
expect 0 "gen smoke" -- $KVQ gen --family kivi --level smoke -o "$T/s.vec"
expect 0 "gen smoke again" -- $KVQ gen --family kivi --level smoke -o "$T/s2.vec"
if cmp -s "$T/s.vec" "$T/s2.vec"; then ok "gen is deterministic"; else bad "gen is not deterministic"; fi
expect 0 "gen with another seed" -- $KVQ gen --family kivi --level smoke --seed 7 -o "$T/s7.vec"
if cmp -s "$T/s.vec" "$T/s7.vec"; then bad "seed has no effect"; else ok "seed changes the cases"; fi
expect 0 "gen shard 0/3" -- $KVQ gen --family kivi --level smoke --shard 0/3 -o "$T/sh0.vec"
expect 0 "gen shard 1/3" -- $KVQ gen --family kivi --level smoke --shard 1/3 -o "$T/sh1.vec"
expect 0 "gen shard 2/3" -- $KVQ gen --family kivi --level smoke --shard 2/3 -o "$T/sh2.vec"
if diff <(grep '^case' "$T/s.vec" | sort) <(cat "$T"/sh?.vec | grep '^case' | sort) >/dev/null; then
  ok "shards partition the full set"; else bad "shards differ from the full set"; fi
expect 2 "gen bad shard" -- $KVQ gen --family kivi --level smoke --shard 3/3 -o "$T/x.vec"
expect 2 "gen unknown family" -- $KVQ gen --family nope --level smoke -o "$T/x.vec"

# the bundled subject passes; reports are written
expect 0 "ref-fast passes smoke" -- $KVQ verify --vectors "$T/s.vec" --subject ref-fast --json "$T/r.json" --junit "$T/r.xml"
grep_out '^[0-9]+ passed, 0 failed$' "closing line N passed, 0 failed"
if grep -q '"failed": 0' "$T/r.json" && grep -q '<testsuites tests=' "$T/r.xml"; then ok "JSON and JUnit reports"; else bad "reports missing"; fi
expect 0 "gen standard" -- $KVQR gen --family kivi --level standard -o "$T/std.vec"
expect 0 "ref-fast passes standard" -- $KVQR verify --vectors "$T/std.vec" --subject ref-fast

# must-fail subjects
expect 1 "ties-away subject FAILS" -- $KVQR verify --vectors "$T/std.vec" --subject "$SUBJ/broken_ties_away.so"
grep_out 'FAIL .*codes: .*expected 0x[0-9a-f]{2}, got 0x[0-9a-f]{2}' "ties-away failure shown in hex"
expect 1 "high-nibble-first subject FAILS" -- $KVQR verify --vectors "$T/std.vec" --subject "$SUBJ/broken_high_first.so"
grep_out 'FAIL .*codes: ' "high-first failure names the codes"
expect 1 "high-nibble-first subject FAILS the bounded level too" -- $KVQR verify --vectors "$T/std.vec" --subject "$SUBJ/broken_high_first.so" --level bounded
# legal freedom: reciprocal multiplication is accepted at the bounded level only
expect 0 "reciprocal-multiply subject passes bounded" -- $KVQR verify --vectors "$T/std.vec" --subject "$SUBJ/recip_mul.so" --level bounded
expect 1 "reciprocal-multiply subject fails exact" -- $KVQR verify --vectors "$T/std.vec" --subject "$SUBJ/recip_mul.so" --level exact

# crash, hang and unavailable subjects are verdicts, not the end of the run
expect 0 "gen a small shard" -- $KVQ gen --family kivi --level smoke --shard 5/16 -o "$T/small.vec"
KVQ_MISBEHAVE=crash expect 1 "crashing subject: cases fail, run completes" -- $KVQ verify --vectors "$T/small.vec" --subject "$SUBJ/misbehave.so"
grep_out 'KVQ_E_SUBJECT' "crash reported as KVQ_E_SUBJECT"
grep_out '^[1-9][0-9]* passed, [1-9][0-9]* failed$' "cases after the crash still ran"
KVQ_MISBEHAVE=hang expect 1 "hanging subject: killed after the time limit" -- $KVQ verify --vectors "$T/small.vec" --subject "$SUBJ/misbehave.so" --timeout 1
grep_out '^[1-9][0-9]* passed, [1-9][0-9]* failed$' "cases after the hang still ran"
KVQ_MISBEHAVE=nodevice expect 1 "unavailable subject: SKIPPED, never passed" -- $KVQ verify --vectors "$T/small.vec" --subject "$SUBJ/misbehave.so"
grep_out '^0 passed, 0 failed, [1-9][0-9]* skipped$' "skips counted as skips"
expect 2 "missing plug-in" -- $KVQ verify --vectors "$T/small.vec" --subject "$T/nonexistent.so"
expect 2 "unknown built-in" -- $KVQ verify --vectors "$T/small.vec" --subject nosuch

# results-file mode
expect 0 "run ref-fast to a results file" -- $KVQ run --subject ref-fast --vectors "$T/s.vec" -o "$T/s.res"
expect 0 "verify the results file" -- $KVQ verify --vectors "$T/s.vec" --results "$T/s.res"
# flip one hex digit of the first codes field: that case must fail, shown in hex
awk 'BEGIN{d=0} /^result .*codes=/ && !d { i=index($0,"codes=")+6; c=substr($0,i,1); r=(c=="0")?"1":"0"; $0=substr($0,1,i-1) r substr($0,i+1); d=1 } {print}' "$T/s.res" > "$T/bad.res"
expect 1 "a corrupted code byte fails" -- $KVQ verify --vectors "$T/s.vec" --results "$T/bad.res"
grep_out '^0*[0-9]+ passed, 1 failed$' "exactly one case fails"
grep '^result' "$T/s.res" | head -n -1 > "$T/body"; { head -2 "$T/s.res"; cat "$T/body"; } > "$T/short.res"
expect 1 "a missing result fails its case" -- $KVQ verify --vectors "$T/s.vec" --results "$T/short.res"
grep_out 'no result for this case' "missing result named"
{ cat "$T/s.res"; grep '^result' "$T/s.res" | head -1; } > "$T/dup.res"
expect 2 "a duplicate result is a format error" -- $KVQ verify --vectors "$T/s.vec" --results "$T/dup.res"
grep_out 'dup.res:[0-9]+: result for .* repeats line' "duplicate named with file and line"

# malformed vector files: exit 2, message names file and line
printf 'kvq-vectors 2\n' > "$T/v2.vec"
expect 2 "unknown version" -- $KVQ verify --vectors "$T/v2.vec" --subject ref-fast
grep_out 'v2.vec:1: unsupported version' "version error names file:line"
head -c 3000 "$T/s.vec" > "$T/trunc.vec"
expect 2 "truncated vector file" -- $KVQ verify --vectors "$T/trunc.vec" --subject ref-fast
grep_out 'trunc.vec:[0-9]+: ' "truncation error names file:line"
sed '7s/ x=[0-9a-f]/ x=g/' "$T/s.vec" > "$T/hex.vec"
expect 2 "bad hex digit" -- $KVQ verify --vectors "$T/hex.vec" --subject ref-fast
grep_out 'hex.vec:7: x: bad hex digit' "hex error names file:line and field"
sed '8s/ bits=[0-9]*//' "$T/s.vec" > "$T/miss.vec"
expect 2 "missing key" -- $KVQ verify --vectors "$T/miss.vec" --subject ref-fast
grep_out "miss.vec:8: missing key 'bits'" "missing key named"
expect 2 "vector file that does not exist" -- $KVQ verify --vectors "$T/none.vec" --subject ref-fast
grep_out 'none.vec: cannot open' "open error named"
ls "$T"/*.tmp.* >/dev/null 2>&1 && bad "temporary files left behind" || ok "no half-written files left"

finish vectors.sh
