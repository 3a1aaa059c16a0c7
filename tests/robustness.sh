#!/usr/bin/env bash
# tests/robustness.sh BUILD -- what a vendor or a CI job meets on bad input and
# odd outputs: each check is the regression test of a defect once found.
# SPEC: [VEC-GEN-01] [VEC-GEN-03] [VEC-FMT-07] [VEC-RES-03] [API-ERR-01] [VER-RUN-04] [VER-OUT-02]
# [VER-REP-03] [VER-CLI-01] [VER-CLI-02] [VER-CLI-04] [VER-CLAIM-01] [VER-EX-02] [API-SUBJ-06]
# [SAGE-ACC-04] [VEC-FMT-08] [VEC-RES-02] [VER-OUT-03]
set -u
B=${1:-build}
KVQ=$B/san/kvq
SUBJ=$B/subjects
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"

# a hand-edited copy of a vector file: no end line, a generator that is not kvq
untrail() { grep -v '^end ' "$1" | sed '5s/^generator .*/generator hand-edited/' > "$2"; }

echo "== tests/robustness.sh"
"$KVQ" gen --family kivi --level smoke -o "$T/k.vec" 2>/dev/null
"$KVQ" gen --family cert --level smoke -o "$T/c.vec" 2>/dev/null

# -- shards: counts near 2^32 and beyond neither wrap nor overflow [VEC-GEN-01]
expect 2 "gen --shard 1/-1 refused" -- $KVQ gen --family kivi --level smoke --shard 1/-1 -o "$T/x.vec"
grep_out "bad shard '1/-1'" "bad shard named"
expect 0 "gen --shard 1/4294967295: one case" -- $KVQ gen --family kivi --level smoke --shard 1/4294967295 -o "$T/sh.vec"
[ "$(grep -c '^case' "$T/sh.vec")" = 1 ] && ok "one case in shard 1/4294967295" || bad "shard 1/4294967295 case count"
expect 2 "gen --shard 0/2^64 refused" -- $KVQ gen --family kivi --level smoke --shard 0/18446744073709551616 -o "$T/x.vec"
# an empty shard is a valid file that every command reads [VEC-GEN-03]
expect 0 "gen --shard past the last case: an empty shard" -- $KVQ gen --family kivi --level smoke --shard 200/300 -o "$T/empty.vec"
grep_out 'past the last case, an empty shard' "gen says the shard is empty"
[ "$(grep -c '^case' "$T/empty.vec")" = 0 ] && [ "$(tail -1 "$T/empty.vec")" = "end 0 fnv1a64:cbf29ce484222325" ] \
  && ok "no case, and the end line of no case" || bad "empty shard: $(tail -1 "$T/empty.vec")"
expect 1 "verify reads the empty shard: no case selected" -- $KVQ verify --vectors "$T/empty.vec" --subject ref-fast --json "$T/empty.json"
grep_out '^0 passed, 0 failed$' "verify reports 0 passed, 0 failed"
expect 0 "run writes the empty shard's results" -- $KVQ run --subject ref-fast --vectors "$T/empty.vec" -o "$T/empty.res"
expect 1 "verify --results of the empty shard" -- $KVQ verify --vectors "$T/empty.vec" --results "$T/empty.res"
grep_out '^0 passed, 0 failed$' "the same counts from its results"
for i in 0 1; do $KVQ verify --vectors "$T/empty.vec" --subject ref-fast --shard $i/2 --json "$T/e$i.json" >/dev/null 2>&1; done
expect 1 "merge accepts the reports of empty shards" -- $KVQ merge "$T/e0.json" "$T/e1.json" --json "$T/em.json" --junit "$T/em.xml"
sed 's/"shard": "[0-9/]*",//' "$T/em.json" | cmp -s - "$T/empty.json" && ok "merged empty report is the single run's" || bad "merged empty report differs"
grep -v '^end ' "$T/empty.vec" > "$T/noend.vec"
expect 2 "a file without cases and without its end line is refused" -- $KVQ verify --vectors "$T/noend.vec" --subject ref-fast
grep_out 'noend.vec:[0-9]+: no cases, and no end line' "cut header-only file named"
expect 2 "gen --seed ' 5' (a blank before the number) refused" -- $KVQ gen --family kivi --level smoke --seed " 5" -o "$T/x.vec"

# -- every case the reader accepts runs: group=0 expecting KVQ_E_PARAM
line=$(grep -n 'err-group12' "$T/k.vec" | cut -d: -f1)
untrail "$T/k.vec" "$T/g0.vec"
sed -i "${line}s/ group=12 / group=0 /" "$T/g0.vec"
expect 0 "ref-fast passes a group=0 error case" -- $KVQ verify --vectors "$T/g0.vec" --subject ref-fast
grep_out 'has no end line' "a file without an end line reads with a warning"

# -- the end line [VEC-FMT-07]
head -n 20 "$T/k.vec" > "$T/cut.vec"
expect 2 "a vector file cut at a line boundary is refused" -- $KVQ verify --vectors "$T/cut.vec" --subject ref-fast
grep_out 'cut.vec:[0-9]+: no end line after 15 cases' "cut file named with its case count"
sed '10s/ tokens=\([0-9]*\) / tokens=\1 /; 10s/\(x=[0-9a-f]\{7\}\)[0-9a-f]/\10/' "$T/k.vec" > "$T/dig.vec"
if cmp -s "$T/k.vec" "$T/dig.vec"; then sed '10s/\(x=[0-9a-f]\{7\}\)0/\11/' "$T/k.vec" > "$T/dig.vec"; fi
expect 2 "a changed case line fails the digest" -- $KVQ verify --vectors "$T/dig.vec" --subject ref-fast
grep_out "dig.vec:[0-9]+: the case lines' digest is fnv1a64:" "digest mismatch named"
{ cat "$T/k.vec"; echo "case id=extra"; } > "$T/after.vec"
expect 2 "a line after the end line is refused" -- $KVQ verify --vectors "$T/after.vec" --subject ref-fast
grep_out "content after the 'end' line" "content after end named"
sed 's/^end [0-9]* /end 3 /' "$T/k.vec" > "$T/cnt.vec"
expect 2 "a wrong case count in the end line is refused" -- $KVQ verify --vectors "$T/cnt.vec" --subject ref-fast
grep_out 'the end line counts 3 cases' "count mismatch named"

# -- a failed call writes nothing [API-ERR-01] [VEC-RES-03]
expect 1 "a subject that writes before an error FAILS (kivi)" -- $KVQ verify --vectors "$T/k.vec" --subject "$SUBJ/write_on_error.so"
grep_out 'as expected, but the call wrote flags: a failed call leaves every output' "writes after an error named"
if grep -E '^  FAIL ' "$T/out" | grep -vq 'as expected, but the call wrote'; then bad "write-on-error fails a case for another reason"
else ok "write-on-error fails for its writes only"; fi
n_fail=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed$/\1/p' "$T/out")
[ "${n_fail:-0}" -ge 10 ] && ok "$n_fail error cases caught" || bad "only ${n_fail:-0} error cases caught"
expect 1 "a subject that writes before an error FAILS (cert-keys)" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/write_on_error.so" --ops cert-keys
grep_out 'but the call wrote sigma' "the written output named"
expect 0 "ref-fast writes nothing on error" -- $KVQ verify --vectors "$T/k.vec" --subject ref-fast

# -- claims [VER-CLAIM-01]
expect 0 "keys-only subject claiming what it answers passes" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_keys_only.so" --ops answered --json "$T/claim.json" --junit "$T/claim.xml"
grep_out 'cases of operations not claimed; claimed: cert-keys' "claim shown in the text report"
grep -q '"operations": \["cert-keys"\]' "$T/claim.json" && ok "claim in the JSON report" || bad "claim missing from JSON"
grep -q 'name="kvq.operations" value="cert-keys"' "$T/claim.xml" && ok "claim in the JUnit report" || bad "claim missing from JUnit"
expect 1 "claiming an operation it lacks still skips" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_keys_only.so" --ops cert-keys,cert-step
expect 2 "claiming an unknown operation is a usage error" -- $KVQ verify --vectors "$T/c.vec" --subject ref-fast --ops cert-nope
grep_out "no operation 'cert-nope'" "unknown operation named"

# -- flags by name [VER-EX-02]
"$KVQ" run --subject ref-fast --vectors "$T/k.vec" -o "$T/k.res" 2>/dev/null
id=$(grep -E '^case id=[^ ]* level=exact .*status=0 flags=0x00000000 ' "$T/k.vec" | head -1 | sed 's/^case id=\([^ ]*\) .*/\1/')
sed "/^result id=$id /s/ flags=0x00000000 / flags=0x00000002 /" "$T/k.res" > "$T/kf.res"
expect 1 "a flags word with an extra bit fails" -- $KVQ verify --vectors "$T/k.vec" --results "$T/kf.res"
grep_out "flags: expected 0x00000000 \(none\), got 0x00000002 \(CLAMPED\): extra CLAMPED" "flags decoded by name"
id=$(grep -E '^case id=[^ ]* level=exact .*status=0 flags=0x00000009 ' "$T/k.vec" | head -1 | sed 's/^case id=\([^ ]*\) .*/\1/')
sed "/^result id=$id /s/ flags=0x00000009 / flags=0x00000000 /" "$T/k.res" > "$T/ks.res"
expect 1 "missing ZERO_SCALE|SUBNORMAL flags fail ($id)" -- $KVQ verify --vectors "$T/k.vec" --results "$T/ks.res"
grep_out "missing ZERO_SCALE\|SUBNORMAL; first subnormal input: element [0-9]+" "the first element involved is named"

# -- a results key no operation has is the file's error, not its case's [VEC-RES-02]
line=$(grep -n "^result id=$id " "$T/k.res" | cut -d: -f1)
sed "${line}s/\$/ colour=red/" "$T/k.res" > "$T/kc.res"
expect 2 "an unknown key in a result is a file error" -- $KVQ verify --vectors "$T/k.vec" --results "$T/kc.res"
grep_out "kc.res:$line: unknown key 'colour'" "the unknown key named with file:line"
sed "${line}s/\$/ sigma=00000000/" "$T/k.res" > "$T/ks2.res"
expect 1 "a key of another operation fails its case only" -- $KVQ verify --vectors "$T/k.vec" --results "$T/ks2.res"
grep_out "key 'sigma' is not an output of kivi-quant" "the foreign key named"

# -- bad step parameters in a status-0 case are the file's error
line=$(grep -n 'op=cert-step.*status=0 ' "$T/c.vec" | head -1 | cut -d: -f1)
untrail "$T/c.vec" "$T/r0.vec"
sed -i "${line}s/ r=[0-9]* / r=0 /" "$T/r0.vec"
expect 2 "status-0 step with r=0 is an input error" -- $KVQ verify --vectors "$T/r0.vec" --subject ref-fast
grep_out "r0.vec:$line: parameters or shape not valid for a status-0 case: 'r >= 1' is false" "bad r named with file:line"
untrail "$T/c.vec" "$T/s0.vec"
sed -i "${line}s/ scale=[0-9a-f]* / scale=00000000 /" "$T/s0.vec"
expect 2 "status-0 step with scale 0 is an input error" -- $KVQ verify --vectors "$T/s0.vec" --subject ref-fast
grep_out "s0.vec:$line: parameters or shape not valid for a status-0 case: 'scale >= 0x1p-126' is false" "bad scale named"

# -- a status-0 case with an input its operation refuses is no case [VEC-FMT-08]
"$KVQ" gen --family sage --level smoke -o "$T/s.vec" 2>/dev/null
# nan_at VEC KEY PATTERN ELEM BITS OUT: element ELEM of KEY set to BITS in the first line matching PATTERN
nan_at() {
  local line; line=$(grep -nE "$3" "$1" | head -1 | cut -d: -f1)
  untrail "$1" "$6"
  sed -i "${line}s/ $2=\(\([0-9a-f]\{8\}\)\{$4\}\)[0-9a-f]\{8\}/ $2=\1$5/" "$6"
  echo "$line"
}
line=$(nan_at "$T/k.vec" x '^case .*tokens=([2-9][0-9]|[0-9]{3}).* status=0 ' 17 7fc00000 "$T/nan.vec")
expect 2 "a status-0 kivi case with a NaN input is refused" -- $KVQ verify --vectors "$T/nan.vec" --subject ref-fast
grep_out "nan.vec:$line: x: element 17 is NaN \(0x7fc00000\) in a status-0 case" "the NaN named with file:line, field and element"
line=$(nan_at "$T/c.vec" k '^case .*op=cert-step .*status=0 ' 3 ff800000 "$T/inf.vec")
expect 2 "a status-0 cert-step case with -inf in k is refused" -- $KVQ verify --vectors "$T/inf.vec" --subject ref-fast
grep_out "inf.vec:$line: k: element 3 is infinite \(0xff800000\)" "the infinity named"
line=$(nan_at "$T/s.vec" p '^case .*op=sage-p .*status=0 ' 0 7f800000 "$T/pinf.vec")
expect 2 "a status-0 sage-p case with +inf in p is refused" -- $KVQ verify --vectors "$T/pinf.vec" --subject ref-fast
grep_out "pinf.vec:$line: p: element 0 is infinite" "the sage input named"

# -- outputs: devices stay devices, links stay links, long names, reasons [VER-RUN-04] [VER-OUT-02]
if [ -c /dev/null ] && [ -w /dev/null ]; then
  expect 0 "gen -o /dev/null" -- $KVQ gen --family kivi --level smoke -o /dev/null
  [ -c /dev/null ] && ok "/dev/null is still a character device" || bad "/dev/null was replaced"
fi
echo old > "$T/target.vec"; ln -s target.vec "$T/link.vec"
expect 0 "gen through a symbolic link" -- $KVQ gen --family kivi --level smoke -o "$T/link.vec"
if [ -L "$T/link.vec" ] && grep -q '^end ' "$T/target.vec"; then ok "the link stays a link, its target is replaced"
else bad "symbolic link replaced or target not written"; fi
long="$T/$(printf 'd%.0s' $(seq 1 200))"; mkdir -p "$long/$(printf 'e%.0s' $(seq 1 200))/$(printf 'f%.0s' $(seq 1 200))"
lp="$long/$(printf 'e%.0s' $(seq 1 200))/$(printf 'f%.0s' $(seq 1 200))/$(printf 'g%.0s' $(seq 1 200)).vec"
echo keep > "${lp%.vec}.ve"
expect 0 "gen to a path of $(echo -n "$lp" | wc -c) bytes" -- $KVQ gen --family kivi --level smoke -o "$lp"
[ -s "$lp" ] && [ "$(cat "${lp%.vec}.ve")" = keep ] && ok "long path written, sibling untouched" || bad "long path"
expect 2 "gen into a missing directory says why" -- $KVQ gen --family kivi --level smoke -o "$T/nodir/x.vec"
grep_out 'No such file or directory' "the reason (errno) is given"
expect 2 "gen onto a directory says why" -- $KVQ gen --family kivi --level smoke -o "$T"
grep_out 'Is a directory' "writing onto a directory refused with the reason"
expect 2 "reading a directory says why" -- $KVQ verify --vectors "$T" --subject ref-fast
grep_out 'cannot read: Is a directory' "directory read named"
expect 2 "bench --json into a missing directory" -- $KVQ bench --json "$T/nodir/b.json"
grep_out 'No such file or directory' "bench names the reason"
cp "$T/k.res" "$T/keep.res"
expect 2 "verify --results F --subject S will not overwrite F" -- $KVQ verify --vectors "$T/k.vec" --subject ref-fast --results "$T/keep.res"
cmp -s "$T/k.res" "$T/keep.res" && ok "the existing results file is untouched" || bad "results file overwritten"
expect 2 "cert --make-dump with an infinite E_key claim is refused" -- $KVQ cert --make-dump "$T/inf.dump" --seed 1 --scale-ekey 1e39
[ ! -e "$T/inf.dump" ] && ok "no dump written" || bad "a dump its reader rejects was written"
ls "$T"/*.tmp.* >/dev/null 2>&1 && bad "temporary files left behind" || ok "no temporary files left"

# -- an output that names an input (or another output) is refused, the input untouched [VER-OUT-03]
cp "$T/k.vec" "$T/in.vec"; ln "$T/in.vec" "$T/hard.vec"; ln -s in.vec "$T/soft.vec"
for o in in.vec hard.vec soft.vec; do
  expect 2 "run -o $o --vectors in.vec refused" -- $KVQ run --subject ref-fast --vectors "$T/in.vec" -o "$T/$o"
  grep_out "kvq run: -o .*$o names the same file as --vectors .*in.vec" "run names both options ($o)"
done
cmp -s "$T/k.vec" "$T/in.vec" && ok "the vectors are untouched" || bad "the vectors were overwritten"
expect 2 "verify --json onto the vectors refused" -- $KVQ verify --vectors "$T/in.vec" --subject ref-fast --json "$T/hard.vec"
expect 2 "verify --junit onto the results refused" -- $KVQ verify --vectors "$T/in.vec" --results "$T/keep.res" --junit "$T/keep.res"
grep_out "kvq verify: --junit .*keep.res names the same file as --results" "verify names the results file"
cmp -s "$T/k.res" "$T/keep.res" && ok "the results are untouched" || bad "the results were overwritten"
expect 2 "verify --html onto the subject refused" -- $KVQ verify --vectors "$T/in.vec" --subject "$SUBJ/recip_mul.so" --html "$SUBJ/recip_mul.so"
expect 2 "verify --json and --junit to one new file refused" -- $KVQ verify --vectors "$T/in.vec" --results "$T/keep.res" --json "$T/new.out" --junit "$T/./new.out"
grep_out "one output would replace the other" "two outputs on one path named"
[ ! -e "$T/new.out" ] && ok "nothing written by a refused verify" || bad "a refused verify wrote"
expect 0 "devices may be named twice" -- $KVQ verify --vectors "$T/in.vec" --results "$T/keep.res" --json /dev/null --junit /dev/null
for i in 0 1; do $KVQ verify --vectors "$T/in.vec" --subject ref-fast --shard $i/2 --json "$T/p$i.json" >/dev/null 2>&1; done
cp "$T/p0.json" "$T/p0.keep"
expect 2 "merge --json onto a shard refused" -- $KVQ merge "$T/p0.json" "$T/p1.json" --json "$T/p0.json"
cmp -s "$T/p0.json" "$T/p0.keep" && ok "the shard is untouched" || bad "merge overwrote a shard"
$KVQ cert --make-dump "$T/d.dump" --seed 1 2>/dev/null; cp "$T/d.dump" "$T/d.keep"
expect 2 "cert --json onto its dump refused" -- $KVQ cert "$T/d.dump" --json "$T/d.dump"
cmp -s "$T/d.dump" "$T/d.keep" && ok "the dump is untouched" || bad "cert overwrote its dump"

# -- reports are valid UTF-8 JSON and XML whatever the subject says [VER-REP-03]
{ printf 'kvq-results 1\nsubject caf\xc3\xa9-\xff\xfe-\x01\n'; printf 'unavailable '; for i in $(seq 1 300); do printf '\xc3\xa9'; done; printf '\n'; } > "$T/u.res"
expect 1 "an unavailable subject with non-ASCII text" -- $KVQ verify --vectors "$T/k.vec" --results "$T/u.res" --json "$T/u.json" --junit "$T/u.xml"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1], encoding="utf-8")); assert d["subject"].startswith("caf\u00e9-"), d["subject"]; assert d["skip_reason"] and d["skip_reason"].strip("\u00e9") == ""' "$T/u.json" 2>"$T/py.err"; then
  ok "JSON report is valid UTF-8 JSON, no character cut"; else bad "JSON report: $(cat "$T/py.err" | tail -1)"; fi
if python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T/u.xml" 2>"$T/py.err"; then
  ok "JUnit report is well-formed XML"; else bad "JUnit report: $(tail -1 "$T/py.err")"; fi

# -- the worked plug-in of spec/api.md builds and passes [API-SUBJ-06]
HERE=$(cd "$(dirname "$0")/.." && pwd)
sed -n '/<!-- BEGIN worked-plugin.c -->/,/<!-- END worked-plugin.c -->/p' "$HERE/spec/api.md" | sed '1,2d;$d' | sed '$d' > "$T/mysubject.c"
if cc -std=c11 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -I"$HERE/include" -I"$HERE/conformance" \
     "$T/mysubject.c" "$B/rel/libkvq.a" -lm -o "$T/mysubject.so" 2>"$T/cc.err"; then
  ok "the worked plug-in of spec/api.md compiles"
  expect 0 "the worked plug-in passes the KIVI vectors" -- $KVQ verify --vectors "$T/k.vec" --subject "$T/mysubject.so"
  expect 1 "the worked plug-in on CERT vectors: every case skipped" -- $KVQ verify --vectors "$T/c.vec" --subject "$T/mysubject.so"
  grep_out '^0 passed, 0 failed, [1-9][0-9]* skipped$' "skips, never passes"
else
  bad "the worked plug-in of spec/api.md does not compile: $(head -3 "$T/cc.err")"
fi

# -- kvq probe without its program or a device: SKIPPED, never a pass [SAGE-ACC-04]
expect 1 "kvq probe with a missing program: skipped" -- $KVQ probe --program "$T/no-such-probe"
grep_out '^kvq probe: SKIPPED \(no probe program' "the missing program named"
printf '#!/bin/sh\necho "mma-probe: SKIPPED (no CUDA device)"\nexit "${KVQ_PROBE_SKIP_STATUS:-0}"\n' > "$T/fake-probe"
chmod +x "$T/fake-probe"
expect 1 "kvq probe: the program's skip is not a pass" -- $KVQ probe --program "$T/fake-probe" --confirm
printf '#!/bin/sh\nexit 3\n' > "$T/bad-probe"
chmod +x "$T/bad-probe"
expect 3 "kvq probe returns the program's status" -- $KVQ probe --program "$T/bad-probe"
expect 2 "kvq probe --program without a path" -- $KVQ probe --program
# malformed arguments are a usage error, whether or not the program exists
for args in "--bogus" "--tiles" "--tiles -5" "--tiles 0" "--tiles 12x" "--seed ' 5'" "--judge d --confirm"; do
  eval "set -- $args"
  expect 2 "kvq probe $args: a usage error, not SKIPPED" -- $KVQ probe --program "$T/no-such-probe" "$@"
  if grep -q '^usage:' "$T/err" && ! grep -q SKIPPED "$T/out" "$T/err"; then ok "kvq probe $args: usage on stderr"
  else bad "kvq probe $args: no usage on stderr, or SKIPPED"; fi
done
expect 3 "well-formed options reach the program" -- $KVQ probe --program "$T/bad-probe" --tiles 0x10 --sample 4 --seed 7 --out "$T" --commit abc

# -- every subcommand has --help [VER-CLI-01]
for c in gen run verify merge demo ops cert bench probe; do
  expect 0 "kvq $c --help" -- $KVQ $c --help
  if head -1 "$T/out" | grep -q '^usage:' && grep -q "kvq $c" "$T/out"; then ok "kvq $c --help prints its usage on stdout"
  else bad "kvq $c --help: no usage on stdout"; fi
done
expect 0 "kvq --version" -- $KVQ --version
grep_out 'vector and results format 1, subject ABI 3' "version names the formats"

finish robustness.sh
