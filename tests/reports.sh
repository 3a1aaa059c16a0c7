#!/usr/bin/env bash
# tests/reports.sh BUILD -- every report says what it judged, and
# `kvq report-check` tells whether a report is one of a given vector file and
# subject: each recorded item is compared here with what sha256sum, the
# vector file's own lines and the build say, not with kvq's own view.
# SPEC: [VER-REP-05] [VER-REP-06] [VER-REP-01] [VER-REP-02] [VER-REP-04]
set -u
B=$(cd "${1:-build}" && pwd)
KVQ=$B/rel/kvq
SUBJ=$B/subjects
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 2

echo "== tests/reports.sh"
"$KVQ" gen --family cert --level smoke --quiet -o c.vec 2>/dev/null
"$KVQ" gen --family cert --level smoke --seed 7 --quiet -o c7.vec 2>/dev/null
"$KVQ" gen --family kivi --level smoke --quiet -o k.vec 2>/dev/null
# jstr FILE KEY: a top-level string of a report; jnum: a number
jstr() { sed -n "s/^  \"$2\": \"\\(.*\\)\",\$/\\1/p" "$1"; }
jnum() { sed -n "s/^  \"$2\": \\([0-9]*\\),\$/\\1/p" "$1"; }
# has FILE KEY WANT WHAT
has() {
  local got; got=$(jstr "$1" "$2"); [ -z "$got" ] && got=$(jnum "$1" "$2")
  if [ "$got" = "$3" ]; then ok "$4"; else bad "$4: \"$2\" is '$got', expected '$3'"; fi
}

# -- subject mode: a plug-in [VER-REP-05]
cp "$SUBJ/cert_midpoint.so" ./mid.so
"$KVQ" verify --vectors c.vec --subject ./mid.so --json mid.json --junit mid.xml --html mid.html >/dev/null 2>&1
grep -q '^  "kvq_report": 2,$' mid.json && ok "the JSON report is of format 2" || bad "format 2 not written"
has mid.json vectors_sha256 "$(sha256sum c.vec | cut -d' ' -f1)" "vectors' SHA-256 is sha256sum's"
has mid.json vectors_digest "$(sed -n 's/^end [0-9]* \(fnv1a64:[0-9a-f]*\)$/\1/p' c.vec)" "vectors' digest is their end line's"
has mid.json family "$(sed -n 's/^family //p' c.vec)" "family from the header"
has mid.json level_set "$(sed -n 's/^levels //p' c.vec)" "level set from the header"
has mid.json seed "$(sed -n 's/^seed //p' c.vec)" "seed from the header"
has mid.json vector_cases "$(grep -c '^case ' c.vec)" "case count of the file"
has mid.json level all "levels judged"
has mid.json claim all "claim"
has mid.json mode subject "judged from the subject"
has mid.json subject_file ./mid.so "subject file as given"
has mid.json subject_sha256 "$(sha256sum mid.so | cut -d' ' -f1)" "subject's SHA-256 is sha256sum's"
has mid.json subject cert-midpoint "subject's name"
has mid.json subject_version unknown "a subject without a version entry: unknown"
has mid.json device unknown "a subject without a device entry: unknown"
has mid.json kvq_commit "$(cat "$B/commit")" "kvq's commit as the build embedded it"
[ -n "$(cat "$B/commit")" ] && ok "the build recorded a commit ($(cat "$B/commit"))" || bad "no commit recorded"
has mid.json results "" "no results file in subject mode"
for k in vectors_sha256 subject_sha256 vectors_digest device kvq_commit level_set; do
  v=$(jstr mid.json $k)
  grep -qF "<property name=\"kvq.${k#kvq_}\" value=\"$v\"/>" mid.xml && ok "JUnit property kvq.${k#kvq_}" || bad "JUnit lacks kvq.${k#kvq_}=$v"
  grep -qF "<code>$v</code>" mid.html && ok "HTML header row of $k" || bad "HTML lacks $k"
done
# ref-fast: kvq's version, its host, kvq's own bytes
"$KVQ" verify --vectors c.vec --subject ref-fast --json ref.json >/dev/null 2>&1
has ref.json subject_version "$("$KVQ" version | cut -d' ' -f2)" "ref-fast reports kvq's version"
jstr ref.json device | grep -Eq '^host .*\('"$(uname -m)"', Linux ' && ok "ref-fast reports its host" \
  || bad "ref-fast device: $(jstr ref.json device)"
has ref.json subject_sha256 "$(sha256sum "$KVQ" | cut -d' ' -f1)" "a built-in subject's bytes are kvq's"
# the selection judged
"$KVQ" verify --vectors c.vec --subject ref-fast --level bounded --ops cert-values,cert-keys --json sel.json >/dev/null 2>&1
has sel.json level bounded "--level recorded"
has sel.json claim cert-keys,cert-values "--ops recorded in registry order"

# -- results mode [VER-REP-05]
"$KVQ" run --subject ./mid.so --vectors c.vec -o mid.res 2>/dev/null
"$KVQ" verify --vectors c.vec --results mid.res --json res.json --junit res.xml >/dev/null 2>&1
has res.json mode results "judged from a results file"
has res.json results mid.res "results file named"
has res.json results_sha256 "$(sha256sum mid.res | cut -d' ' -f1)" "results' SHA-256 is sha256sum's"
has res.json subject "$(sed -n 's/^subject //p' mid.res)" "the results file's subject line"
has res.json subject_sha256 "" "no subject file in results mode"

# -- reports hashed by tests do not depend on the machine (KVQ_REPORT_FIXED_PROVENANCE)
mkdir -p elsewhere && cp mid.so elsewhere/other-name.so
KVQ_REPORT_FIXED_PROVENANCE=1 "$KVQ" verify --vectors c.vec --subject ./mid.so --json f1.json >/dev/null 2>&1
KVQ_REPORT_FIXED_PROVENANCE=1 "$KVQ" verify --vectors c.vec --subject "$T/elsewhere/other-name.so" --json f2.json >/dev/null 2>&1
cmp -s f1.json f2.json && ok "fixed provenance: the same bytes from another path" || bad "fixed provenance reports differ"
has f1.json kvq_commit fixed-for-tests "fixed commit"
has f1.json device fixed-for-tests "fixed device"
has f1.json vectors_sha256 "$(sha256sum c.vec | cut -d' ' -f1)" "the vectors' digest is never fixed"

# -- kvq report-check [VER-REP-06]
expect 0 "a report matches its vectors and subject" -- "$KVQ" report-check mid.json --vectors c.vec --subject ./mid.so
grep_out "mid.json: match" "match said"
expect 0 "a ref-fast report matches" -- "$KVQ" report-check ref.json --vectors c.vec --subject ref-fast
expect 0 "a results-mode report matches its results file" -- "$KVQ" report-check res.json --vectors c.vec --results mid.res
expect 0 "a --level/--ops report matches" -- "$KVQ" report-check sel.json --vectors c.vec --subject ref-fast
expect 1 "another vector file of the same family is a mismatch" -- "$KVQ" report-check mid.json --vectors c7.vec --subject ./mid.so
grep_out "vectors_sha256: expected \"$(sha256sum c7.vec | cut -d' ' -f1)\", recorded \"$(sha256sum c.vec | cut -d' ' -f1)\"" "vectors' digest named, expected vs recorded"
grep_out 'seed: expected "0x0000000000000007", recorded "0x00000000006b7671"' "seed named"
grep_out "mid.json: MISMATCH" "mismatch said"
expect 1 "another subject is a mismatch" -- "$KVQ" report-check mid.json --vectors c.vec --subject "$SUBJ/cert_unsound.so"
grep_out "subject_sha256: expected \"$(sha256sum "$SUBJ/cert_unsound.so" | cut -d' ' -f1)\", recorded \"$(sha256sum mid.so | cut -d' ' -f1)\"" "subject's SHA-256 named"
grep_out 'subject: expected "cert-unsound", recorded "cert-midpoint"' "subject's name named"
printf 'x' >> elsewhere/other-name.so
expect 1 "a rebuilt subject of the same name is a mismatch" -- "$KVQ" report-check mid.json --vectors c.vec --subject elsewhere/other-name.so
grep_out "subject_sha256: expected" "rebuilt subject named by its bytes"
expect 1 "a subject-mode report against a results file is a mismatch" -- "$KVQ" report-check mid.json --vectors c.vec --results mid.res
grep_out 'mode: expected "results", recorded "subject"' "mode named"
{ cat mid.res; echo '# the same results and a comment'; } > mid2.res
expect 1 "another results file is a mismatch" -- "$KVQ" report-check res.json --vectors c.vec --results mid2.res
grep_out 'results_sha256: expected' "results' SHA-256 named"
# results mode: the outcomes are judged again -- a fail edited into a pass, counts and all
l=$(grep -n '"outcome": "fail"' res.json | head -1 | cut -d: -f1)
fid=$(sed -n "${l}s/^    {\"id\": \"\([^\"]*\)\".*/\1/p" res.json)
sed -e "${l}s/\"outcome\": \"fail\", \"detail\": \"[^\"]*\"/\"outcome\": \"pass\"/" \
    -e "s/^  \"passed\": [0-9]*,/  \"passed\": $(( $(jnum res.json passed) + 1 )),/" \
    -e "s/^  \"failed\": [0-9]*,/  \"failed\": $(( $(jnum res.json failed) - 1 )),/" res.json > flipped.json
expect 1 "a failed case edited into a pass (counts too) is a mismatch" -- "$KVQ" report-check flipped.json --vectors c.vec --results mid.res
grep_out "case $fid: recorded pass, the results file gives fail: " "the edited outcome named with the verdict"
# a report edited by hand: counts, a deleted case, a case of the wrong shard
sed -e 's/^  "failed": [0-9]*,/  "failed": 0,/' mid.json > forged.json
expect 1 "a report whose counts disagree with its cases is a mismatch" -- "$KVQ" report-check forged.json --vectors c.vec --subject ./mid.so
grep_out "report: its counts say [0-9]+ passed, 0 failed" "edited counts named"
first=$(grep -n '^    {"id": ' ref.json | head -1 | cut -d: -f1)
id=$(sed -n "${first}s/^    {\"id\": \"\\([^\"]*\\)\".*/\\1/p" ref.json)
sed -e "${first}d" -e "s/^  \"passed\": [0-9]*,/  \"passed\": $(( $(jnum ref.json passed) - 1 )),/" \
    -e "s/^  \"deselected\": 0,/  \"deselected\": 1,/" -e 's/^  "level": "all",/  "level": "exact",/' ref.json > del.json
expect 1 "a deleted case passed off as deselected is a mismatch" -- "$KVQ" report-check del.json --vectors c.vec --subject ref-fast
grep_out "case $id \\(line [0-9]+\\): selected by the report's level and operations, but not in it" "the missing case named"
"$KVQ" verify --vectors c.vec --subject ref-fast --shard 1/2 --json sh1.json >/dev/null 2>&1
expect 0 "a shard's report matches" -- "$KVQ" report-check sh1.json --vectors c.vec --subject ref-fast
sed 's/^  "shard": "1\/2",/  "shard": "0\/2",/' sh1.json > sh0.json
expect 1 "a shard's cases under another shard number are a mismatch" -- "$KVQ" report-check sh0.json --vectors c.vec --subject ref-fast
grep_out "is not of shard 0/2" "wrong shard named"
# usage and input errors
expect 2 "report-check without --vectors" -- "$KVQ" report-check mid.json --subject ./mid.so
expect 2 "report-check with --subject and --results" -- "$KVQ" report-check mid.json --vectors c.vec --subject ./mid.so --results mid.res
expect 2 "report-check of a missing report" -- "$KVQ" report-check nope.json --vectors c.vec
grep_out "nope.json: cannot open" "missing report named"
head -c 200 mid.json > cut.json
expect 2 "report-check of a malformed report" -- "$KVQ" report-check cut.json --vectors c.vec
grep_out "cut.json: byte [0-9]+: " "malformed report named with its byte offset"
sed 's/^  "kvq_report": 2,/  "kvq_report": 1,/' mid.json > old.json
expect 2 "report-check of a format-1 report" -- "$KVQ" report-check old.json --vectors c.vec
grep_out "report format 1 records nothing of what it judged" "format 1 named"
expect 0 "report-check --help" -- "$KVQ" report-check --help
grep_out "kvq report-check REPORT.json --vectors FILE" "usage printed"

finish reports.sh
