#!/usr/bin/env bash
# tests/vectors.sh BUILD -- end-to-end tests of the kvq command: determinism and
# sharding of gen, the bundled subject passing, the deliberately wrong subjects
# failing, the legal-freedom subject passing the bounded level only, crash /
# hang / unavailable subjects as verdicts, results-file mode, and malformed
# input rejected with file and line; the same for the CERT family (ref-fast
# passes, a v1 subject is skipped, the midpoint and unsound subjects fail).  SPEC: [VEC-GEN-01] [VER-EXIT-01]
# [VER-RUN-01] [VER-RUN-02] [VER-RUN-04] [VER-CLI-02] [VER-CLI-03] [VER-CLI-04] [VER-ST-01]
# [VER-CASE-02] [VER-OUT-01] [TEST-NEG-01] [TEST-SKIP-01] [TEST-REF-01] [POL-TIE-01] [LAY-PACK-01] [KIVI-B-02]
# [API-SUBJ-07] [VEC-CERT-08] [CERT-VAR-02] [CERT-VAR-03]; the SAGE family at the end (ref-fast passes,
# the wrong subjects fail naming the requirement); then the PKV family (ref-fast passes both level sets, every
# bad-input row is an error case, kvqio reads the files, the wrong subjects fail naming the requirement).
# SPEC: [VEC-PKV-01] [VEC-PKV-04] [VEC-PKV-05] [VEC-PKV-06] [VEC-PKV-07] [VEC-PKV-08] [VEC-PKV-09] [PKV-ERR-02] [PKV-A-02] [PKV-A-04] [PKV-V-02] [PKV-U-02] [PKV-Q-02]
set -u
B=${1:-build}
KVQ=$B/san/kvq          # ASan+UBSan build for the quick checks
KVQR=$B/rel/kvq         # plain build for the standard level
SUBJ=$B/subjects
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"

echo "== tests/vectors.sh"
# ---- every family the registry lists (kvq ops --families; its operations from
# kvq ops), with no list of its own.  SPEC: [VER-REG-12] [VEC-GEN-01] [VEC-GEN-02] [VEC-GEN-04]
# Smoke vectors generate deterministically, two shards partition them, every
# operation has a status-0 case and an error case, and ref-fast passes them.
FAMS=$($KVQR ops --families)
[ -n "$FAMS" ] && ok "kvq ops --families lists $(echo "$FAMS" | awk '{print $1}' | tr '\n' ' ')" \
  || bad "kvq ops --families lists nothing"
while read -r fam sets; do
  case " $sets " in *" smoke "*) ;; *) bad "$fam: no smoke set"; continue;; esac
  expect 0 "gen $fam smoke" -- $KVQR gen --family "$fam" --level smoke -o "$T/reg-$fam.vec"
  expect 0 "gen $fam smoke again" -- $KVQR gen --family "$fam" --level smoke -o "$T/reg-$fam-2.vec"
  cmp -s "$T/reg-$fam.vec" "$T/reg-$fam-2.vec" && ok "$fam gen is deterministic" || bad "$fam gen is not deterministic"
  expect 0 "gen $fam shard 0/2" -- $KVQR gen --family "$fam" --level smoke --shard 0/2 -o "$T/reg-$fam-sh0.vec"
  expect 0 "gen $fam shard 1/2" -- $KVQR gen --family "$fam" --level smoke --shard 1/2 -o "$T/reg-$fam-sh1.vec"
  if diff <(grep '^case' "$T/reg-$fam.vec" | sort) <(cat "$T/reg-$fam"-sh?.vec | grep '^case' | sort) >/dev/null; then
    ok "$fam shards partition the full set"; else bad "$fam shards differ from the full set"; fi
  for op in $($KVQR ops | awk -v f="$fam" '/^[a-z0-9_]+ \(/ {cur = $1; next} cur == f && / levels: / {print $1}'); do
    if grep -q " op=$op .*status=0" "$T/reg-$fam.vec" && grep -Eq " op=$op .*status=[1-9]" "$T/reg-$fam.vec"; then
      ok "$fam smoke has $op cases with status 0 and error cases"; else bad "$fam smoke lacks $op cases of status 0 or of an error"; fi
  done
  expect 0 "ref-fast passes $fam smoke" -- $KVQR verify --vectors "$T/reg-$fam.vec" --subject ref-fast
  grep_out '^[1-9][0-9]* passed, 0 failed$' "$fam smoke: N passed, 0 failed, nothing skipped"
done <<< "$FAMS"
# the on-demand set `large` [VEC-GEN-04]: in the description, not in --families (so not generated
# here: minutes of generation), and a family without it refuses it naming its sets
if grep -q ' large' <<< "$FAMS"; then bad "kvq ops --families lists an on-demand set"; else ok "kvq ops --families lists routine sets only"; fi
$KVQR ops --json | python3 -c 'import json,sys; d=json.load(sys.stdin); f={x["name"]: x["level_sets"] for x in d["families"]}
sys.exit(0 if "large" in d["level_sets"] and f["sage"] == ["smoke", "standard", "large"] and "large" not in f["kivi"] else 1)' \
  && ok "kvq ops --json: sage generates large, kivi does not" || bad "kvq ops --json: level sets of sage and kivi"
expect 2 "gen kivi large: no such set" -- $KVQR gen --family kivi --level large -o "$T/x.vec"
grep_out "unknown level set 'large' of family kivi \(smoke\|standard\)" "the refusal names the family's sets"
[ ! -e "$T/x.vec" ] && ok "nothing written" || bad "gen kivi large wrote a file"

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
# ---- CERT family: SPEC: [VEC-CERT-01] [VEC-CERT-02] [VEC-CERT-03] [VEC-CERT-04] [VEC-CERT-05]
# [VEC-CERT-06] [VEC-CERT-07] [VER-CERT-01] [VER-CERT-02] [VER-CERT-03] [VER-CERT-04]
# [VER-CERT-05] [VER-CERT-06] [API-SUBJ-03] [API-SUBJ-04]
# [CERT-K8-06] [CERT-ANN-03] [CERT-CON-02] [CERT-VER-02]
expect 0 "gen cert smoke" -- $KVQ gen --family cert --level smoke -o "$T/c.vec"
expect 0 "gen cert smoke again" -- $KVQ gen --family cert --level smoke -o "$T/c2.vec"
if cmp -s "$T/c.vec" "$T/c2.vec"; then ok "cert gen is deterministic"; else bad "cert gen is not deterministic"; fi
expect 0 "gen cert shard 0/2" -- $KVQ gen --family cert --level smoke --shard 0/2 -o "$T/csh0.vec"
expect 0 "gen cert shard 1/2" -- $KVQ gen --family cert --level smoke --shard 1/2 -o "$T/csh1.vec"
if diff <(grep '^case' "$T/c.vec" | sort) <(cat "$T"/csh?.vec | grep '^case' | sort) >/dev/null; then
  ok "cert shards partition the full set"; else bad "cert shards differ from the full set"; fi
expect 0 "ref-fast passes cert smoke" -- $KVQ verify --vectors "$T/c.vec" --subject ref-fast --junit "$T/c.xml"
grep_out '^[1-9][0-9]* passed, 0 failed$' "cert smoke: N passed, 0 failed, nothing skipped"
if grep -q 'classname="cert.bounded"' "$T/c.xml"; then ok "JUnit names the cert family"; else bad "JUnit classname"; fi
expect 0 "gen cert standard" -- $KVQR gen --family cert --level standard -o "$T/cstd.vec"
expect 0 "ref-fast passes cert standard" -- $KVQR verify --vectors "$T/cstd.vec" --subject ref-fast
grep_out '^[1-9][0-9]* passed, 0 failed$' "cert standard: N passed, 0 failed, nothing skipped"
# a version-1 subject runs, every CERT case SKIPPED (never passed), exit 1
expect 1 "v1 subject: cert cases skipped" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/misbehave.so"
grep_out '^0 passed, 0 failed, [1-9][0-9]* skipped$' "v1 subject: skips counted as skips"
expect 1 "v2 subject without CERT entries: skipped" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/broken_ties_away.so"
grep_out '^0 passed, 0 failed, [1-9][0-9]* skipped$' "NULL entries: skips counted as skips"
# a version-3 subject with one operation: its cases pass, every other case is
# SKIPPED (KIVI's too: no operation is mandatory) [API-SUBJ-05] [VER-REG-03]
expect 1 "ABI-3 keys-only subject: cert-keys pass, the rest skipped" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_keys_only.so" --json "$T/ko.json"
grep_out '^[1-9][0-9]* passed, 0 failed, [1-9][0-9]* skipped$' "keys-only: passes and skips counted"
if grep -q '"outcome": "pass"' "$T/ko.json" && ! grep '"outcome": "pass"' "$T/ko.json" | grep -vq -- '-keys-\|-err-keys-'; then
  ok "keys-only: only cert-keys cases pass"; else bad "keys-only: a case of another operation passed"; fi
grep -q 'subject-has-no-cert_quantize_values' "$T/ko.json" && grep -q 'subject-has-no-cert_step' "$T/ko.json" \
  && ok "keys-only: skips name the missing entry" || bad "keys-only: skip reasons"
expect 1 "ABI-3 keys-only subject on KIVI vectors: every case skipped" -- $KVQ verify --vectors "$T/s.vec" --subject "$SUBJ/cert_keys_only.so"
grep_out '^0 passed, 0 failed, [1-9][0-9]* skipped$' "keys-only on KIVI: skips, never passes"
KVQ_ABI3_DEFECT=abi expect 2 "ABI-3 record with a wrong abi tag refused" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_keys_only.so"
grep_out 'no usable kvq_subject_v3 record' "wrong abi tag named"
KVQ_ABI3_DEFECT=lookup expect 2 "ABI-3 record without a lookup refused" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_keys_only.so"
# must-fail subjects
for lv in exact bounded; do
  expect 1 "midpoint zero point FAILS cert-keys ($lv, smoke)" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_midpoint.so" --level $lv
  grep_out "FAIL [^ ]*-keys-[^ ]* \[$lv, cert-keys .*: z\[.*expected 0x[0-9a-f]{8}.*got 0x[0-9a-f]{8}" "midpoint failure names z in hex ($lv)"
  expect 1 "midpoint zero point FAILS cert-keys ($lv, standard)" -- $KVQR verify --vectors "$T/cstd.vec" --subject "$SUBJ/cert_midpoint.so" --level $lv
  grep_out "FAIL [^ ]*-keys-[^ ]* \[$lv, cert-keys .*: z\[" "midpoint standard failure names z ($lv)"
done
expect 1 "unsound E_key claim FAILS cert-step (smoke)" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_unsound.so"
grep_out 'FAIL [^ ]*-step-[^ ]* .*claims: .*claim ekey 0x[0-9a-f]{8} .* below sound E_key 0x[0-9a-f]{8}' "unsound claim: reason names the claim and the sound E_key"
if grep -E '^  FAIL ' "$T/out" | grep -vq -- '-step-'; then bad "unsound subject fails a non-step case"; else ok "unsound subject fails step cases only"; fi
expect 1 "unsound E_key claim FAILS cert-step (standard)" -- $KVQR verify --vectors "$T/cstd.vec" --subject "$SUBJ/cert_unsound.so"
grep_out 'claims: .*below sound E_key' "unsound claim fails the standard steps"
# the step variants [CERT-VAR-01..03]: a faithful paper step with the paper's
# Eq. 15 certificate passes; a step of the other variant than the case
# declares fails; an ABI-2 subject (cert_step v1) runs the sparse cases only
expect 0 "paper step with the paper's certificate PASSES (standard)" -- $KVQR verify --vectors "$T/cstd.vec" --subject "$SUBJ/cert_paper_claim.so" --ops cert-step
grep_out '^[1-9][0-9]* passed, 0 failed$' "paper-claim subject: every step case passes, none skipped"
expect 1 "sparse step declared paper FAILS (standard)" -- $KVQR verify --vectors "$T/cstd.vec" --subject "$SUBJ/cert_sparse_as_paper.so" --ops cert-step
if grep -E '^  FAIL ' "$T/out" | grep -vq -- '-paper-'; then bad "sparse-as-paper fails a sparse case"; else ok "sparse-as-paper fails paper cases only"; fi
expect 1 "paper step declared sparse FAILS (standard)" -- $KVQR verify --vectors "$T/cstd.vec" --subject "$SUBJ/cert_paper_as_sparse.so" --ops cert-step
grep_out 'FAIL [^ ]*-step-[^ ]* .*claims: .*claim ekey .* below sound E_key' "paper-as-sparse: the paper E_key is below the sparse sound E_key"
if grep -E '^  FAIL ' "$T/out" | grep -q -- '-paper-'; then bad "paper-as-sparse fails a paper case"; else ok "paper-as-sparse fails sparse cases only"; fi
expect 1 "ABI-2 step subject: paper cases skipped" -- $KVQ verify --vectors "$T/c.vec" --subject "$SUBJ/cert_unsound.so" --ops cert-step --json "$T/v1step.json"
if grep -q 'subject-cert_step-v1-predates-variant-paper' "$T/v1step.json" &&
   ! grep '"outcome": "skip"' "$T/v1step.json" | grep -Eq -- '-[0-9]{5}-step-'; then
  ok "cert_step v1 serves the sparse cases, the paper cases skip with the reason"; else bad "v1 cert_step skip reason or scope wrong"; fi
# its error handling is judged too: the error steps' sparse twins [VEC-CERT-08]
if python3 - "$T/v1step.json" <<'PY'
import json, sys
cs = [c for c in json.load(open(sys.argv[1]))["cases"] if "-err-sparse-step-" in c["id"]]
judged = [c for c in cs if c["outcome"] != "skip"]
print("  (%d sparse error steps, %d judged)" % (len(cs), len(judged)))
sys.exit(0 if len(cs) == 12 and len(judged) == 12 else 1)
PY
then ok "cert_step v1: the twelve sparse error steps are judged, none skipped"; else bad "cert_step v1: error steps not judged"; fi
# a file of kvq 0.3 (no variant field, no paper twins): its steps are sparse
# steps [CERT-VAR-02], so a cert_step v1 subject runs every one of them
python3 - "$T/c.vec" "$T/legacy.vec" <<'PY'
import sys
sys.path.insert(0, "conformance/python")
import kvqio
out, cases = [], []
for l in open(sys.argv[1]).read().split("\n"):
    if l.startswith("generator "):
        l = "generator kvq 0.3.0"
    elif l.startswith("case "):
        if "-paper-" in l.split()[1]:
            continue
        l = l.replace(" variant=sparse", "")
        cases.append(l)
    elif l.startswith("end ") or l == "":
        continue
    out.append(l)
h = None
for c in cases:
    h = kvqio.fnv1a64(c + "\n", h)
out.append("end %d fnv1a64:%016x" % (len(cases), h))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
expect 0 "a kvq 0.3 file: ref-fast passes its steps" -- $KVQ verify --vectors "$T/legacy.vec" --subject ref-fast --ops cert-step
expect 1 "a kvq 0.3 file: a v1 cert_step runs every step (none skipped)" -- $KVQ verify --vectors "$T/legacy.vec" --subject "$SUBJ/cert_unsound.so" --ops cert-step
grep_out '^[0-9]+ passed, [1-9][0-9]* failed$' "no step of the kvq 0.3 file skipped"
# results-file mode: a step output moved far away violates the contract; a
# lowered eta annotation fails the bounded level
expect 0 "run ref-fast on cert smoke" -- $KVQ run --subject ref-fast --vectors "$T/c.vec" -o "$T/c.res"
expect 0 "verify the cert results file" -- $KVQ verify --vectors "$T/c.vec" --results "$T/c.res"
awk 'BEGIN{d=0} /^result .*-step-.* out=/ && !d { i=index($0," out=")+5; $0=substr($0,1,i-1) "47000000" substr($0,i+8); d=1 } {print}' "$T/c.res" > "$T/cbad.res"
expect 1 "a step output of 32768 fails the contract" -- $KVQ verify --vectors "$T/c.vec" --results "$T/cbad.res"
grep_out 'contract' "contract failure named"
rl=$(grep -n ' out=47000000' "$T/cbad.res" | head -1 | cut -d: -f1)
grep_out "step-[a-z-]*:$rl: contract violated" "contract failure cites the results line ($rl) of the step"
grep_out '^[0-9]+ passed, 1 failed$' "exactly one step fails"
id=$(grep -E '^case id=[^ ]*-values-[^ ]* level=bounded .*status=0 ' "$T/c.vec" | grep -v 'eta=\(00000000\)*0* ' | head -1 | sed 's/^case id=\([^ ]*\) .*/\1/')
awk -v id="$id" '$2=="id="id { i=index($0," eta=")+5; $0=substr($0,1,i-1) "00000000" substr($0,i+8) } {print}' "$T/c.res" > "$T/ceta.res"
expect 1 "an eta below the exact value fails ($id)" -- $KVQ verify --vectors "$T/c.vec" --results "$T/ceta.res"
grep_out 'eta\[block 0\]: below the exact value' "eta failure named"
{ head -2 "$T/c.res"; echo "result id=$id status=0 skipped=x"; } > "$T/cskip.res"
expect 2 "status and skipped together: format error" -- $KVQ verify --vectors "$T/c.vec" --results "$T/cskip.res"
grep_out 'cskip.res:3: ' "results error names file:line"
# malformed CERT vector lines: exit 2, file:line
line=$(grep -n 'op=cert-step' "$T/c.vec" | head -1 | cut -d: -f1)
sed "${line}s/ q=[0-9a-f]/ q=z/" "$T/c.vec" > "$T/cq.vec"
expect 2 "cert-step: bad hex digit in q" -- $KVQ verify --vectors "$T/cq.vec" --subject ref-fast
grep_out "cq.vec:$line: q: bad hex digit" "bad q digit names file:line and field"
line=$(grep -n 'op=cert-keys' "$T/c.vec" | head -1 | cut -d: -f1)
sed "${line}s/ dim=[0-9]*//" "$T/c.vec" > "$T/cd.vec"
expect 2 "cert-keys: missing dim" -- $KVQ verify --vectors "$T/cd.vec" --subject ref-fast
grep_out "cd.vec:$line: missing key 'dim'" "missing dim named"
sed "${line}s/ status=0/ status=0 tau=3f800000/" "$T/c.vec" > "$T/ct.vec"
expect 2 "cert-keys: a step field" -- $KVQ verify --vectors "$T/ct.vec" --subject ref-fast
grep_out "ct.vec:$line: key 'tau' is not a field of cert-keys" "foreign field named"
line=$(grep -n 'op=cert-values.*status=0' "$T/c.vec" | head -1 | cut -d: -f1)
sed "${line}s/ eta=[0-9a-f]*/ eta=00/" "$T/c.vec" > "$T/ce.vec"
expect 2 "cert-values: short eta" -- $KVQ verify --vectors "$T/ce.vec" --subject ref-fast
grep_out "ce.vec:$line: eta: 2 hex digits" "short eta names file:line"
sed "${line}s/op=cert-values/op=kivi-quant/" "$T/c.vec" > "$T/ck.vec"
expect 2 "a kivi-quant line in a cert file" -- $KVQ verify --vectors "$T/ck.vec" --subject ref-fast
grep_out "ck.vec:$line: " "wrong operation names file:line"
sed '2s/family cert/family kivi/' "$T/c.vec" > "$T/cf.vec"
expect 2 "cert cases under family kivi" -- $KVQ verify --vectors "$T/cf.vec" --subject ref-fast
grep_out 'cf.vec:[0-9]+: op cert-[a-z]+ is not an operation of family kivi' "family mismatch named"
ls "$T"/*.tmp.* >/dev/null 2>&1 && bad "temporary files left behind" || ok "no half-written files left"
# ---- constructed coverage of the level sets, on every seed.  SPEC: [VEC-GEN-02]
# [VEC-CERT-07] [VEC-CERT-05] [CERT-REC-01] [CERT-L-01] [CERT-K8-01] [CERT-PROM-01]
# [CERT-LAD-01] [CERT-LAD-02] [POL-NF-01] [POL-SZ-01] [KIVI-M-02] [KIVI-Q-04] [KIVI-Q-05]
# [KIVI-D-01] [KIVI-B-02] [KIVI-B-03] [TEST-NEG-01]
# json_ids FILE OUTCOME: the ids of a JSON report's cases with that outcome
json_ids() { grep -E '"id": "[^"]*"' "$1" | grep -F "\"outcome\": \"$2\"" | sed 's/.*"id": "\([^"]*\)".*/\1/'; }
# NaN and infinities at both levels, for every quantizer operation, in both level sets
nonfinite() { # FILE OP LEVEL WORDS-REGEX: a case of OP at LEVEL expecting KVQ_E_NONFINITE
  awk -v op="$2" -v lv="$3" -v re="^($4)$" '
    $1 == "case" && index($0, " op=" op " ") && index($0, " level=" lv " ") && index($0, " status=1 ") {
      for (i = 2; i <= NF; i++) if ($i ~ /^[xkv]=/)
        for (j = 3; j + 7 <= length($i); j += 8) if (substr($i, j, 8) ~ re) { found = 1 }
    } END { exit !found }' "$1"
}
for f in s std c cstd; do
  miss=""
  case $f in s|std) ops=kivi-quant ;; *) ops="cert-keys cert-values" ;; esac
  for op in $ops; do for lv in exact bounded; do
    nonfinite "$T/$f.vec" $op $lv 7fc00000 || miss="$miss $op/$lv/NaN"
    nonfinite "$T/$f.vec" $op $lv '7f800000|ff800000' || miss="$miss $op/$lv/inf"
  done; done
  [ -z "$miss" ] && ok "$f.vec: a NaN and an infinity case at both levels of each quantizer" || bad "$f.vec lacks:$miss"
done
# binary16 metadata whose rounded offset clamps a code, at both levels of the smoke set
for lv in exact bounded; do
  if grep -E "^case .* level=$lv .* meta=f16 .* status=0 flags=0x0000000[2367abef] " "$T/s.vec" | grep -q -- '-f16-clamp '; then
    ok "kivi smoke: an f16-metadata case with clamped codes ($lv)"; else bad "kivi smoke: no clamped f16 case at $lv"; fi
done
# -0 zero-range key channels: one block-channel of sixteen -0, one mixing +0 and -0,
# both stored as sigma = +0, z = +0 by the exact path
negzero() { # FILE: the first status-0 cert-keys case holding both channels
  awk '$1 == "case" && index($0, " op=cert-keys ") && index($0, " status=0 ") {
      n = d = 0; kk = sg = zz = ""
      for (i = 2; i <= NF; i++) {
        if ($i ~ /^tokens=/) n = substr($i, 8) + 0
        if ($i ~ /^dim=/) d = substr($i, 5) + 0
        if ($i ~ /^k=/) kk = substr($i, 3)
        if ($i ~ /^sigma=/) sg = substr($i, 7)
        if ($i ~ /^z=/) zz = substr($i, 3)
      }
      all = mix = 0
      for (b = 0; b < int(n / 16); b++) for (c = 0; c < d; c++) {
        neg = pos = 0
        for (t = 0; t < 16; t++) {
          w = substr(kk, 8 * ((16 * b + t) * d + c) + 1, 8)
          if (w == "80000000") neg++; else if (w == "00000000") pos++
        }
        m = 8 * (b * d + c) + 1
        if (neg + pos == 16 && substr(sg, m, 8) == "00000000" && substr(zz, m, 8) == "00000000") {
          if (neg == 16) all = 1; else if (neg > 0) mix = 1
        }
      }
      if (all && mix) { found = 1; exit }
    } END { exit !found }' "$1"
}
for f in c cstd; do
  negzero "$T/$f.vec" && ok "$f.vec: -0 and mixed +0/-0 zero-range key channels, stored +0" || bad "$f.vec: no -0 zero-range key channel"
done
# the ladder: every constructed step takes its path under ref-fast (rec word 1 the
# rung, word 5 the promoted blocks [VEC-CERT-05] [CERT-REC-01]), and the level set
# has the steps it promises (at rung 0 with promotion, rungs 1, 2, 3 and 4)
expect 0 "run ref-fast on cert standard" -- $KVQR run --subject ref-fast --vectors "$T/cstd.vec" -o "$T/cstd.res"
expect 0 "the cert standard results pass" -- $KVQR verify --vectors "$T/cstd.vec" --results "$T/cstd.res"
ladder() { # RESULTS SET MIN: per-class rung checks and the totals
  local res=$1 set=$2 min=$3 id rec rung prom cls want n=0 wrong="" c0p=0 c1=0 c2=0 c3=0 c4=0
  while read -r id rec; do
    rung=$((16#${rec:8:8})); prom=$((16#${rec:40:8}))
    [ "$rung" = 0 ] && [ "$prom" -gt 0 ] && c0p=$((c0p + 1))
    case $rung in 1) c1=$((c1 + 1)) ;; 2) c2=$((c2 + 1)) ;; 3) c3=$((c3 + 1)) ;; 4) c4=$((c4 + 1)) ;; esac
    cls=${id##*-step-}
    case $cls in
      promote) want="0 +" ;; rung1) want="1 ." ;; rung2) want="2 +" ;; dense3) want="3 ." ;; dense4) want="4 ." ;; *) continue ;;
    esac
    n=$((n + 1))
    if [ "$rung" != "${want% *}" ] || { [ "${want#* }" = "+" ] && [ "$prom" = 0 ]; }; then wrong="$wrong $id:rung$rung/prom$prom"; fi
  done < <(sed -n 's/^result id=\([^ ]*-step-[^ ]*\) .* rec=\([0-9a-f]\{120\}\).*/\1 \2/p' "$res")
  [ -z "$wrong" ] && ok "$set: every constructed step takes its rung ($n steps)" || bad "$set: steps off their path:$wrong"
  [ "$n" -ge "$min" ] && ok "$set: $n constructed steps (at least $min)" || bad "$set: $n constructed steps, fewer than $min"
  echo "      $set ref-fast steps: rung 0 promoting $c0p, rung 1 $c1, rung 2 $c2, rung 3 $c3, rung 4 $c4"
  if [ "$c0p" -ge $((min / 4)) ] && [ "$c1" -ge $((min / 4)) ] && [ "$c2" -ge $((min / 4)) ] && [ "$c3" -ge $((min / 6)) ] && [ "$c4" -ge $((min / 6)) ]; then
    ok "$set: rung-0 promotion, rungs 1, 2, 3 and 4 all reached"; else bad "$set: a path of the ladder is thin"; fi
}
ladder "$T/c.res" "cert smoke" 12
ladder "$T/cstd.res" "cert standard" 24
# a step that uses the default 1/sqrt(d) whatever scale it is given fails the steps
# whose scale differs, and nothing else; ref-fast passes them (above)
for set in c cstd; do
  expect 1 "scale-ignoring subject FAILS cert-step ($set)" -- $KVQR verify --vectors "$T/$set.vec" --subject "$SUBJ/cert_ignores_scale.so" --json "$T/is.json"
  nf=$(json_ids "$T/is.json" fail | wc -l); nfs=$(json_ids "$T/is.json" fail | grep -c -- '-step-')
  nsx=$(grep -cE '^case id=[^ ]*-step-(promote|rung1|rung2|dense3|dense4) ' "$T/$set.vec")
  nsxf=$(json_ids "$T/is.json" fail | grep -cE -- '-step-(promote|rung1|rung2|dense3|dense4)$')
  if [ "$nf" -gt 0 ] && [ "$nf" = "$nfs" ] && [ "$nsxf" = "$nsx" ]; then
    ok "scale-ignoring subject: $nf cert-step failures, every step at another scale ($nsx), no other case"
  else bad "scale-ignoring subject ($set): $nf failures, $nfs steps, $nsxf of $nsx scaled steps"; fi
done
# freedoms the exact level forbids are caught on every seed: a reciprocal
# multiplication (bounded level: accepted) and a binary64 dequantization rounded to
# binary32 (accepted by the bounded level too)
for seed in 1 2 3 0x6b7671; do
  expect 0 "gen kivi smoke (seed $seed)" -- $KVQR gen --family kivi --level smoke --seed $seed -o "$T/ks.vec"
  expect 1 "reciprocal-multiply subject FAILS exact (seed $seed)" -- $KVQR verify --vectors "$T/ks.vec" --subject "$SUBJ/recip_mul.so" --level exact --json "$T/rm.json"
  json_ids "$T/rm.json" fail | grep -q -- '-recip-tie$' && ok "a recip-tie case catches it (seed $seed)" || bad "no recip-tie case fails (seed $seed)"
  expect 0 "reciprocal-multiply subject passes bounded (seed $seed)" -- $KVQR verify --vectors "$T/ks.vec" --subject "$SUBJ/recip_mul.so" --level bounded
  expect 1 "binary64-dequantizing subject FAILS exact (seed $seed)" -- $KVQR verify --vectors "$T/ks.vec" --subject "$SUBJ/deq_double.so" --level exact --json "$T/dd.json"
  json_ids "$T/dd.json" fail | grep -q -- '-deq-midpoint$' && ok "a deq-midpoint case catches it (seed $seed)" || bad "no deq-midpoint case fails (seed $seed)"
  expect 0 "binary64-dequantizing subject passes bounded (seed $seed)" -- $KVQR verify --vectors "$T/ks.vec" --subject "$SUBJ/deq_double.so" --level bounded
  expect 0 "ref-fast passes kivi smoke (seed $seed)" -- $KVQR verify --vectors "$T/ks.vec" --subject ref-fast
done
expect 1 "binary64-dequantizing subject FAILS exact (standard)" -- $KVQR verify --vectors "$T/std.vec" --subject "$SUBJ/deq_double.so" --level exact
grep_out 'FAIL [^ ]*-deq-midpoint .*deq: .*expected 0x[0-9a-f]{8}.*got 0x[0-9a-f]{8}' "deq-midpoint failure shown in hex"

# ---- SAGE family.  SPEC: [VEC-SAGE-01] [VEC-SAGE-02] [VEC-SAGE-03] [VEC-SAGE-04] [VEC-SAGE-05]
# [VEC-SAGE-06] [SAGE-BAD-01] [SAGE-SM-03] [SAGE-MAP-03] [SAGE-Q-03] [SAGE-Q-04] [SAGE-P-03]
# [SAGE-V-03] [SAGE-LEM-05] [SAGE-LEM-06] [SAGE-FLAG-01] [VEC-SAGE-07] [VEC-SAGE-08] [SAGE-ACC-05]
# [SAGE-ACC-06] [SAGE-ACC-07] [VEC-SAGE-09] [VEC-SAGE-10] [SAGE-ATT-07] [VEC-SAGE-13] [VEC-SAGE-14]
# [SAGE-MHA-01] [SAGE-MHA-02] [SAGE-MHA-03]
expect 0 "gen sage smoke" -- $KVQ gen --family sage --level smoke -o "$T/g.vec"
expect 0 "gen sage smoke again" -- $KVQ gen --family sage --level smoke -o "$T/g2.vec"
if cmp -s "$T/g.vec" "$T/g2.vec"; then ok "sage gen is deterministic"; else bad "sage gen is not deterministic"; fi
expect 0 "gen sage shard 0/2" -- $KVQ gen --family sage --level smoke --shard 0/2 -o "$T/gsh0.vec"
expect 0 "gen sage shard 1/2" -- $KVQ gen --family sage --level smoke --shard 1/2 -o "$T/gsh1.vec"
if diff <(grep '^case' "$T/g.vec" | sort) <(cat "$T"/gsh?.vec | grep '^case' | sort) >/dev/null; then
  ok "sage shards partition the full set"; else bad "sage shards differ from the full set"; fi
if grep '^case' "$T/g.vec" | grep -Ev ' op=sage-(pv|attn|mha) ' | grep -vq ' level=exact '; then bad "a sage quantizer case is not exact"
else ok "every sage quantizer case is exact [VEC-SAGE-01]"; fi
if grep -q ' level=bounded op=sage-pv ' "$T/g.vec" && grep -q ' level=exact op=sage-pv ' "$T/g.vec"; then
  ok "sage-pv has cases of both levels [VEC-SAGE-07]"; else bad "sage-pv lacks a level"; fi
expect 0 "ref-fast passes sage smoke" -- $KVQ verify --vectors "$T/g.vec" --subject ref-fast --junit "$T/g.xml"
grep_out '^[1-9][0-9]* passed, 0 failed$' "sage smoke: N passed, 0 failed, nothing skipped"
if grep -q 'classname="sage.exact"' "$T/g.xml"; then ok "JUnit names the sage family"; else bad "sage JUnit classname"; fi
# a NaN attention output fails with a reason that says so (a NaN has no distance) [VEC-SAGE-10]
$KVQ run --subject ref-fast --vectors "$T/g.vec" -o "$T/g.res" --quiet 2>/dev/null
sed -E '/id=sage-smoke-[0-9]+-attn-/ s/ o=[0-9a-f]{8}/ o=7fc00000/' "$T/g.res" > "$T/gnan.res"
expect 1 "a NaN sage-attn output fails" -- $KVQ verify --vectors "$T/g.vec" --results "$T/gnan.res" --ops sage-attn
grep_out '= nan \(0x7fc00000\): not a number; exact attention is \[' "the reason says the output is not a number"
expect 0 "gen sage standard" -- $KVQR gen --family sage --level standard -o "$T/gstd.vec"
for lv in exact bounded; do for f in g gstd; do
  if [ $lv = exact ]; then
    expect 0 "ref-fast passes sage $f at the exact level" -- $KVQR verify --vectors "$T/$f.vec" --subject ref-fast --level exact
    grep_out '^[1-9][0-9]* passed, 0 failed$' "sage $f exact: N passed, 0 failed, nothing skipped"
  else # the bounded level: sage-pv's cases only [VEC-SAGE-08]
    expect 0 "ref-fast passes sage $f at the bounded level" -- $KVQR verify --vectors "$T/$f.vec" --subject ref-fast --level bounded
    grep_out '^[1-9][0-9]* passed, 0 failed$' "sage $f bounded: N passed, 0 failed"
  fi
done; done
# the bad-input table's statuses [SAGE-BAD-01], as the exact path decides them
while read -r cls st; do
  if grep -Eq "^case id=sage-std-[0-9]+-err-$cls .* status=$st( |$)" "$T/gstd.vec"; then ok "error case $cls expects status $st"
  else bad "error case $cls: not status $st"; fi
done <<'TAB'
qk-nan 1
qk-inf 1
qk-above-2p48 3
qk-dim96 2
qk-empty 2
qk-bits3 3
qk-block100 3
qk-seg0 3
p-negative 3
p-above-1 3
p-nan 1
p-inf 1
p-rows0 2
v-nan 1
v-ninf 1
v-dim32 2
v-empty 2
ds-nan 1
ds-tau0 3
ds-tau-inf 1
ds-above-2p51 3
ds-rows0 3
ds-dim96 2
pv-nan-code 1
pv-c-inf 1
pv-e5m2-inf 1
pv-buffer96 3
pv-rows0 2
attn-nan 1
attn-dim64 3
attn-buffer96 3
attn-above-2p48 3
attn-tau0 3
dq-scale-nan 1
dq-scale-inf 1
dq-scale-negative 3
dq-scale-subnormal 3
dq-range 4
dq-bits3 3
dq-dim96 2
mha-heads3of2 3
mha-not-binary16 3
mha-not-bfloat16 3
mha-nan 1
TAB
# coverage the wrong subjects below rely on
for want in 'op=sage-qk role=q bits=4 gran=thread .* rounding=paper .* ties=even .*status=0 flags=0x00000001' \
            'op=sage-qk role=k bits=8 gran=block .* rounding=public ' 'op=sage-qk .* gran=warp .* ties=away ' \
            'op=sage-p fmt=e5m2 .* overflow=nan ' 'op=sage-v fmt=e4m3 .* overflow=nan .* flags=0x00000001' \
            'op=sage-ds rows=[2-9] '; do
  grep -Eq "^case [^ ]* level=exact $want" "$T/gstd.vec" && ok "sage standard has: $want" || bad "sage standard lacks: $want"
done
# several heads [VEC-SAGE-13]: every input format, MQA, GQA groups and one head a KV head
for want in 'hq=4 hkv=1 in_fmt=bfloat16 ' 'hq=4 hkv=2 in_fmt=binary16 ' 'hq=6 hkv=3 in_fmt=bfloat16 .* causal=1 ' \
            'hq=2 hkv=2 in_fmt=binary32 ' 'hq=3 hkv=1 in_fmt=bfloat16 .* bits=4 ' 'hq=4 hkv=2 in_fmt=binary16 nq=1 '; do
  grep -Eq "^case [^ ]* level=bounded op=sage-mha ($want).* status=0 " "$T/gstd.vec" && ok "sage standard has sage-mha: $want" \
    || bad "sage standard lacks sage-mha: $want"
done
# results-file mode: a flipped code digit of a sage-qk result fails exactly that case
expect 0 "run ref-fast on sage smoke" -- $KVQ run --subject ref-fast --vectors "$T/g.vec" -o "$T/g.res"
expect 0 "verify the sage results file" -- $KVQ verify --vectors "$T/g.vec" --results "$T/g.res"
awk 'BEGIN{d=0} /^result .*-qk-.* codes=[0-9a-f]/ && !d { i=index($0," codes=")+7; c=substr($0,i,1); r=(c=="0")?"1":"0"; $0=substr($0,1,i-1) r substr($0,i+1); d=1 } {print}' "$T/g.res" > "$T/gbad.res"
expect 1 "a corrupted sage code fails" -- $KVQ verify --vectors "$T/g.vec" --results "$T/gbad.res"
grep_out '^[0-9]+ passed, 1 failed$' "exactly one sage case fails"
grep_out 'FAIL [^ ]*-qk-.*codes: .*\[SAGE-Q-0[35]\]' "the corrupted code names its requirement"
# a subject without SAGE entries: every case SKIPPED, never passed [VER-REG-03]
expect 1 "a subject without SAGE entries: sage cases skipped" -- $KVQ verify --vectors "$T/g.vec" --subject "$SUBJ/cert_keys_only.so"
grep_out '^0 passed, 0 failed, [1-9][0-9]* skipped$' "no SAGE entry: skips, never passes"
# must-fail subjects, each failing with the requirement it violates named
sage_fails() { # SUBJECT DESCRIPTION PATTERN-EVERY-FAIL-MATCHES PATTERN-SOME-FAIL-MATCHES
  expect 1 "$2 FAILS (standard)" -- $KVQR verify --vectors "$T/gstd.vec" --subject "$SUBJ/$1.so" --max-show 1000
  grep_out "$4" "$2: the failure names the requirement"
  if grep -E '^  FAIL ' "$T/out" | grep -Evq -- "$3"; then bad "$2: a case outside its defect fails"; grep -E '^  FAIL ' "$T/out" | grep -Ev -- "$3" | head -3 | cut -c1-300
  else ok "$2: only the cases its defect reaches fail"; fi
}
sage_fails sage_ties_away_int4 "INT4 ties away under ties=even" \
  '-qk-ties \[exact, [qk] INT4 [a-z]+ .* paper ' 'FAIL [^ ]*-qk-ties .*codes: .*\[SAGE-Q-03\] \(ties even\) \[POL-TIE-01\]'
sage_fails sage_per_warp "per-warp scales where per-thread is declared" \
  '\[exact, [qk] INT[48] thread ' 'FAIL [^ ]*-qk-[^ ]* \[exact, [qk] INT[48] thread .*scale\[slot [0-9]+\]: .*\[SAGE-MAP-03\] \(gran thread\)'
sage_fails sage_smooth_k_block "K smoothed with block means" \
  '-qk-.*\[exact, [qk] INT[48] .* seg=([0-9]{3,}|[7-9][0-9]|6[5-9]) ' 'FAIL [^ ]*-qk-[^ ]* \[exact, k .*mean: .*\[SAGE-SM-03\]'
sage_fails sage_e5m2_for_e4m3 "E5M2 where E4M3 is declared" \
  '-[pv]-([a-z]+-)?e4m3 ' 'FAIL [^ ]*-v-e4m3 .*scale\[channel [0-9]+\]: .*\(fmt e4m3, F = 448\) \[SAGE-P-03\]'
grep_out 'FAIL [^ ]*-p-e4m3 .*codes: .*\(fmt e4m3, F = 448\) \[SAGE-P-03\]' "E5M2 for E4M3: sage-p failure names [SAGE-P-03]"
sage_fails sage_fp8_nan_at_bound "NaN at F under the NaN overflow policy" \
  'overflow nan: ' 'FAIL [^ ]*-p-e[45]m[23] .*codes: .*overflow nan: no conversion overflows\) \[SAGE-LEM-06\]'
grep_out 'FAIL [^ ]*-v-e[45]m[23] .*codes: .*overflow nan: no conversion overflows\) \[SAGE-LEM-05\]' "NaN at F: sage-v failure names [SAGE-LEM-05]"
sage_fails sage_fp8_overflow_swapped "overflow rules swapped (NaN under saturate)" \
  'overflow saturate: ' 'FAIL [^ ]*-[pv]-e[45]m[23] .*codes: .*overflow saturate: no conversion overflows\) \[SAGE-LEM-0[56]\]'
# the accumulator's wrong subjects [VEC-SAGE-08]
sage_fails sage_pv_round_nearest "accumulator rounding to nearest" \
  '-pv-[a-z]+ \[exact, ' 'FAIL [^ ]*-pv-[a-z]+ \[exact, .*d\[row [0-9]+\]: .*\[SAGE-ACC-07\] \(model '
sage_fails sage_pv_c_after "C added after the products" \
  '-pv-[a-z]+ \[exact, ' 'FAIL [^ ]*-pv-[a-z]+ \[exact, .*\[SAGE-ACC-07\] \(model .*\[SAGE-ACC-02\]'
sage_fails sage_pv_no_buffer "no FP32 buffer" \
  '-pv-[a-z]+ \[exact, .* buffer=(64|128)' 'FAIL [^ ]*-pv-.*\[SAGE-ACC-05\] \(FP32 buffer\)'
sage_fails sage_pv_buffer_256 "a buffer every 256 products" \
  '-pv-[a-z]+ \[exact, .* buffer=(64|128)' 'FAIL [^ ]*-pv-.*\[SAGE-ACC-05\] \(FP32 buffer\)'
sage_fails sage_pv_f16_accumulate "binary16 accumulation" \
  '-pv-[a-z]+ \[(exact|bounded), ' 'FAIL [^ ]*-pv-[a-z]+ \[bounded, .*outside .*\[SAGE-ACC-06\]'
sage_fails sage_pv_wide_accumulator "a wider accumulator at the exact level" \
  '-pv-[a-z]+ \[exact, ' 'FAIL [^ ]*-pv-[a-z]+ \[exact, .*\[SAGE-ACC-07\]'
expect 0 "a wider accumulator PASSES the bounded level ([SAGE-ACC-06])" -- $KVQR verify --vectors "$T/gstd.vec" --subject "$SUBJ/sage_pv_wide_accumulator.so" --level bounded
grep_out '^[1-9][0-9]* passed, 0 failed$' "wider accumulator: bounded cases pass"
# the attention pipeline's wrong subjects [VEC-SAGE-10]
# (every head of a sage-mha case is the pipeline: they fail those too [VEC-SAGE-14])
for w in no_rescale:'no online-softmax rescale' no_ds:'no dS' p_unscaled:'P~ without 448' v_unscaled:'no V scale'; do
  sage_fails "sage_attn_${w%%:*}" "attention: ${w#*:}" '-(attn-[a-z]+|mha-[a-z]+-[a-z0-9]+) \[bounded, ' \
    'FAIL [^ ]*-attn-[a-z]+ \[bounded, .*o\[row [0-9]+, channel [0-9]+\] = .*above the bound .* \[SAGE-ATT-07\]'
  grep_out 'FAIL [^ ]*-mha-[a-z]+-[a-z0-9]+ \[bounded, .*o\[head [0-9]+, row [0-9]+, channel [0-9]+\] = .*above the bound .* \[SAGE-ATT-07\]' \
    "attention: ${w#*:}: a sage-mha failure names the head and [SAGE-ATT-07]"
done
# several heads' wrong readings [VEC-SAGE-14]: the grouping read as interleaved fails the cases with
# groups of several query heads on several KV heads only; bfloat16 read as binary16 the case beyond its range
sage_fails sage_mha_head_mod "GQA heads read h % hkv" '-mha-[a-z]+-[a-z0-9]+ \[bounded, hq=([4-9]|[1-9][0-9]+) hkv=([2-9]|[1-9][0-9]+) ' \
  'FAIL [^ ]*-mha-[a-z]+-[a-z0-9]+ \[bounded, .*o\[head [0-9]+, row .*\[SAGE-ATT-07\] \(head [0-9]+ on KV head [0-9]+ of [0-9]+ \[SAGE-MHA-01\]'
sage_fails sage_mha_as_binary16 "bfloat16 inputs read as binary16" '-mha-huge-bfloat16 \[bounded, ' \
  'FAIL [^ ]*-mha-huge-bfloat16 \[bounded, .*\[SAGE-ATT-07\] .*inputs exactly bfloat16 \[SAGE-MHA-02\]'
# the separating cases [VEC-SAGE-11]: each wrong reading fails only the case built for it
sage_gap() { # SUBJECT DESCRIPTION CASE-NAME PATTERN-SOME-FAIL-MATCHES [LEVEL]
  expect 1 "$2 FAILS (standard${5:+, $5})" -- $KVQR verify --vectors "$T/gstd.vec" --subject "$SUBJ/$1.so" --max-show 1000 ${5:+--level $5}
  grep_out "$4" "$2: the failure names the requirement"
  if grep -E '^  FAIL ' "$T/out" | grep -Evq -- "-$3 \\["; then bad "$2: a case other than -$3 fails"; grep -E '^  FAIL ' "$T/out" | grep -Ev -- "-$3 \\[" | head -3 | cut -c1-300
  else ok "$2: only the -$3 cases fail"; fi
}
sage_gap sage_smooth_sum_pos_zero "smoothing sum from +0" qk-negzero \
  'FAIL [^ ]*-qk-negzero \[exact, .*mean: .*expected 0x80000000 .*\[SAGE-SM-03\]'
sage_gap sage_p_rowsum_pos_zero "P~ row sum from +0" p-negzero-e4m3 \
  'FAIL [^ ]*-p-negzero-e4m3 \[exact, .*rowsum\[row [0-9]+\]: expected 0x80000000 .*\[SAGE-P-02\]'
sage_gap sage_ds_sum_pos_zero "dS sum from +0" ds-negzero \
  'FAIL [^ ]*-ds-negzero \[exact, .*ds: .*expected 0x80000000 .*\[SAGE-DS-01\]'
sage_gap sage_v_negzero_positive "-0 in a nonzero V channel coded 0x00" v-negzero-e4m3 \
  'FAIL [^ ]*-v-negzero-e4m3 \[exact, .*codes: .*expected 0x80, got 0x00 \[SAGE-V-02\]'
sage_gap sage_fp8_midpoint_away "FP8 midpoints rounded away" '[pv]-midpoint-e[45]m[23]' \
  'FAIL [^ ]*-p-midpoint-e4m3 \[exact, .*codes: .*\[SAGE-P-01\]'
grep_out 'FAIL [^ ]*-v-midpoint-e5m2 \[exact, .*codes: .*\[SAGE-V-02\]' "FP8 midpoints away: sage-v failure names [SAGE-V-02]"
sage_gap sage_public_real_round "public rounding as the real round half away" qk-public-half \
  'FAIL [^ ]*-qk-public-half \[exact, .* public .*codes: .*\[SAGE-Q-05\]'
sage_gap sage_pv_e4m3_emin14 "wgmma E4M3 aligned at emin -14" pv-subnormal \
  'FAIL [^ ]*-pv-subnormal \[exact, wgmma e4m3 .*\[SAGE-ACC-07\] \(model wgmma e4m3\) \[SAGE-ACC-02\]'
sage_gap sage_pv_zero_negative "a zero step of negative and -0 terms gives -0" pv-negzero \
  'FAIL [^ ]*-pv-negzero \[exact, .*expected 0x00000000 \(0x0p\+0\), got 0x80000000 .*\[SAGE-ACC-07\]'
sage_gap sage_attn_ds_unsmoothed "attention: dS from the unsmoothed keys" attn-koffset \
  'FAIL [^ ]*-attn-koffset \[bounded, .*above the bound .* \[SAGE-ATT-07\]'
# dequantization [VEC-SAGE-12]: every code field, INT4 -8 and INT8 -128 included
sage_gap sage_dq_clamp_min "dequantization reading -8/-128 as -cmax" dq \
  'FAIL [^ ]*-dq \[exact, .*y: .*\[SAGE-Q-08\] .*\[SAGE-Q-06\]'
for f in 8 12; do
  sage_gap sage_pv_frac$f "an accumulator cut at $f fraction bits" pv-adversarial \
    'FAIL [^ ]*-pv-adversarial \[bounded, .*outside .*K\(13, 14\) \[SAGE-ACC-06\]' bounded
  grep_out '^[0-9]+ passed, 2 failed$' "$f fraction bits: both adversarial cases fail"
done
# saturating whatever the policy says cannot be observed: no SAGE conversion overflows
expect 0 "saturate-always subject PASSES sage standard ([SAGE-BAD-01] row 15)" -- $KVQR verify --vectors "$T/gstd.vec" --subject "$SUBJ/sage_fp8_saturate_always.so"

# ---- PKV [VEC-PKV-01..09] ----------------------------------------------------------
expect 0 "gen pkv standard" -- $KVQR gen --family pkv --level standard -o "$T/pstd.vec"
expect 0 "ref-fast passes pkv standard" -- $KVQR verify --vectors "$T/pstd.vec" --subject ref-fast --junit "$T/pstd.xml"
grep_out '^[1-9][0-9]* passed, 0 failed$' "pkv standard: N passed, 0 failed, nothing skipped"
grep -q 'classname="pkv.bounded"' "$T/pstd.xml" && grep -q 'classname="pkv.exact"' "$T/pstd.xml" \
  && ok "JUnit names the pkv family at both levels" || bad "pkv JUnit classnames"
if python3 conformance/python/kvqio.py --check "$T/pstd.vec" >"$T/py.out" 2>&1; then ok "kvqio reads pkv standard byte for byte"
else bad "kvqio cannot read pkv standard"; head -3 "$T/py.out"; fi
# both levels, every variant [VEC-PKV-09]
for want in 'level=bounded op=pkv-kmeans variant=random ' 'level=bounded op=pkv-kmeans patterns=' \
            'level=exact op=pkv-quant variant=euclid kind=0 ' 'level=bounded op=pkv-quant variant=euclid ' \
            'level=exact op=pkv-quant kind=2 .* v_threshold=1 alpha=1 ' 'level=bounded op=pkv-quant kind=1 ' \
            'level=exact op=pkv-quant kind=[0-2] bits=2 group=[0-9]+ meta=f16 ' \
            'level=exact op=pkv-key-flush variant=before ' 'level=exact op=pkv-key-flush bits=' \
            'level=exact op=pkv-value-step .* residual=128 window=128 .* steps=385 ' 'level=exact op=pkv-dequant kind=2 '; do
  grep -Eq "^case [^ ]* $want" "$T/pstd.vec" && ok "pkv standard has: $want" || bad "pkv standard lacks: $want"
done
# every bad-input row of [PKV-ERR-02] that a vector can carry, with the status the spec gives
for e in km-err-patterns0:3 km-err-max-iter0:3 km-err-max-iter1001:3 km-err-l-lt-m:2 km-err-nan:1 km-err-inf:1 \
         km-err-range:4 q-err-bits3:3 q-err-group12:3 q-err-alpha3:3 q-err-kind3:3 q-err-v-threshold2:3 \
         q-err-keys-ragged-tokens:2 q-err-values-ragged-dim:2 q-err-npat0:2 q-err-npat65536:2 q-err-nan-bank:1 \
         q-err-inf-bank:1 q-err-nan-x:1 q-err-inf-x:1 q-err-range-x:4 q-err-range-bank:4 \
         dq-err-index-past-npat-key:3 dq-err-no-pattern-in-key-block:3 dq-err-index-past-npat-value:3 \
         dq-err-nan-bank:1 dq-err-range-bank:4 dq-err-npat0:2 dq-err-nan-scale:1 dq-err-negative-scale:3 \
         kf-err-bank-full:2 kf-err-nan-flush2:1 kf-err-npat-over-room:3 kf-err-npat0:2 kf-err-bits3:3 \
         vs-err-bank-full:2 vs-err-nan-step5:1 vs-err-empty-bank-leaving:2 vs-err-alpha3:3 vs-err-range-step3:4; do
  cls=${e%%:*}; st=${e##*:}
  if grep -Eq "^case id=pkv-std-[0-9]+-$cls .* status=$st( |$)" "$T/pstd.vec"; then ok "pkv error case $cls expects status $st"
  else bad "pkv error case $cls: not status $st"; fi
done
# the constructed cases say what they separate: exact ties go to the lowest index, the pinned distance
# decides at the exact level where the exact one differs, rho = t keeps the pattern, the next float drops it
for want in 'q-tie-dup-key-decode .* index=00010002' 'q-shift-tie-minmax .*level=exact .* index=00000000' \
            'q-shift-tie-euclid .* index=00010001' 'q-pinned-vs-real .*level=exact .* index=0000.* real=0001' \
            'q-rho-eq-t .*level=exact .* index=00000000' 'q-rho-above-t .* index=ffffffff' 'q-rho-095 .* index=ffffffff'; do
  grep -Eq "^case id=pkv-std-[0-9]+-$want" "$T/pstd.vec" && ok "pkv constructed: $want" || bad "pkv constructed lacks: $want"
done
# results-file mode: one flipped index digit fails exactly that case
expect 0 "run ref-fast on pkv standard" -- $KVQR run --subject ref-fast --vectors "$T/pstd.vec" -o "$T/pstd.res"
awk 'BEGIN{d=0} /^result .*-q-key-decode .* index=[0-9a-f]/ && !d { i=index($0," index=")+10; c=substr($0,i,1); r=(c=="0")?"1":"0"; $0=substr($0,1,i-1) r substr($0,i+1); d=1 } {print}' "$T/pstd.res" > "$T/pbad.res"
expect 1 "a corrupted pkv index fails" -- $KVQR verify --vectors "$T/pstd.vec" --results "$T/pbad.res"
grep_out '^[0-9]+ passed, 1 failed$' "exactly one pkv case fails"
# the k-means judge fails a token moved to another cluster and a centroid moved off its fixed point [PKV-KM-06]
awk 'BEGIN{d=0} /^result .*-km-m4-spread / && !d { i=index($0," cluster=")+16; c=substr($0,i,1); r=(c=="0")?"1":"0"; $0=substr($0,1,i-1) r substr($0,i+1); d=1 } {print}' "$T/pstd.res" > "$T/pkm1.res"
expect 1 "a pkv-kmeans token in a worse cluster fails" -- $KVQR verify --vectors "$T/pstd.vec" --results "$T/pkm1.res"
grep_out 'FAIL [^ ]*-km-m4-spread .*not in a cluster of least exact squared Euclidean distance .*\[PKV-KM-06\]' "kmeans: a non-optimal cluster names [PKV-KM-06]"
awk 'BEGIN{d=0} /^result .*-km-m4-spread / && !d { i=index($0," patterns=")+13; c=substr($0,i,1); r=(c=="8")?"4":"8"; $0=substr($0,1,i-1) r substr($0,i+1); d=1 } {print}' "$T/pstd.res" > "$T/pkm2.res"
expect 1 "a pkv-kmeans centroid off its fixed point fails" -- $KVQR verify --vectors "$T/pstd.vec" --results "$T/pkm2.res"
grep_out 'FAIL [^ ]*-km-m4-spread .*not a Lloyd fixed point \[PKV-KM-06\] \[PKV-KM-05\]' "kmeans: a moved centroid names [PKV-KM-06]"
# must-fail subjects, each failing with the requirement it violates named
pkv_fails() { # SUBJECT DESCRIPTION PATTERN-EVERY-FAIL-MATCHES PATTERN-SOME-FAIL-MATCHES
  expect 1 "$2 FAILS (pkv standard)" -- $KVQR verify --vectors "$T/pstd.vec" --subject "$SUBJ/$1.so" --max-show 1000
  grep_out "$4" "$2: the failure names the requirement"
  if grep -E '^  FAIL ' "$T/out" | grep -Evq -- "$3"; then bad "$2: a case outside its defect fails"; grep -E '^  FAIL ' "$T/out" | grep -Ev -- "$3" | head -3 | cut -c1-300
  else ok "$2: only the cases its defect reaches fail"; fi
}
pkv_fails pkv_euclid_for_minmax "Euclidean in place of min-max" '-(q|kf|vs)-' \
  'FAIL [^ ]*-q-[^ ]* \[exact, .*index of token [0-9]+: .*\(least min-max distance .*\[PKV-A-01\]'
grep_out 'FAIL [^ ]*-q-shift-tie-minmax \[exact, ' "Euclidean in place of min-max: the shift tie fails"
pkv_fails pkv_ties_highest "ties to the highest index" '-(q-(tie-dup|shift-tie|pinned-vs-real)|kf-|vs-)[^ ]* \[exact, ' \
  'FAIL [^ ]*-q-tie-dup-key-decode .*\(equal pinned distances: the lowest index\) \[PKV-A-02\]'
expect 0 "ties to the highest index PASSES the bounded level ([PKV-A-04])" -- $KVQR verify --vectors "$T/pstd.vec" --subject "$SUBJ/pkv_ties_highest.so" --level bounded
pkv_fails pkv_centre_mean "the mean in place of the Chebyshev centre" '-(kf|vs)-' \
  'FAIL [^ ]*-kf-[^ ]* .*bank_end: .*\[PKV-U-02\]'
grep_out 'FAIL [^ ]*-vs-defaults .*bank_end: .*\[PKV-U-02\] \[PKV-U-05\]' "the mean in place of the centre: the value bank fails too"
pkv_fails pkv_threshold_sqrt5_d "the threshold with sqrt(5) d" '-q-[^ ]* \[(exact|bounded), value |-vs-' \
  'FAIL [^ ]*-q-rho-095 \[exact, .*\[PKV-V-01\] \[PKV-V-02\]'
grep_out 'FAIL [^ ]*-q-rho-095 \[bounded, .*\[PKV-V-02\]' "the threshold with sqrt(5) d: the bounded level fails it too"
pkv_fails pkv_resid_wrong_pattern "the residual against another pattern" '-(q|kf|vs)-' \
  'FAIL [^ ]*-q-[^ ]* \[exact, .*resid: .*\[PKV-Q-02\]'

# ---- VIDKV [VEC-VIDKV-01..07]: ref-fast passes the standard set; each wrong
# subject fails exactly the cases its defect reaches, naming the requirement.
expect 0 "gen vidkv standard" -- $KVQR gen --family vidkv --level standard -o "$T/vstd.vec"
expect 0 "ref-fast passes vidkv standard" -- $KVQR verify --vectors "$T/vstd.vec" --subject ref-fast
grep_out '^[1-9][0-9]* passed, 0 failed$' "vidkv standard: every case passes"
for want in 'op=vidkv-keys .* normal=3 .*status=0' 'op=vidkv-keys .* normal=0 key_frac=3f000000 .*status=0' \
            'op=vidkv-values .* vdeq=1 vpack=1 ' 'op=vidkv-values .* protect=3f000000 .*status=0' \
            'op=vidkv-stream .* kflush=0 vflush=1 ' 'op=vidkv-stream .* kflush=1 vflush=0 ' \
            'op=vidkv-stream .* protect=3f000000 .*status=0'; do
  grep -Eq "^case [^ ]* level=[a-z]+ $want" "$T/vstd.vec" && ok "vidkv standard has: $want" || bad "vidkv standard lacks: $want"
done
vidkv_fails() { # SUBJECT DESCRIPTION PATTERN-EVERY-FAIL-MATCHES PATTERN-SOME-FAIL-MATCHES
  expect 1 "$2 FAILS (vidkv standard)" -- $KVQR verify --vectors "$T/vstd.vec" --subject "$SUBJ/$1.so" --max-show 1000
  grep_out "$4" "$2: the failure names the requirement"
  if grep -E '^  FAIL ' "$T/out" | grep -Evq -- "$3"; then bad "$2: a case outside its defect fails"; grep -E '^  FAIL ' "$T/out" | grep -Ev -- "$3" | head -3 | cut -c1-300
  else ok "$2: only the cases its defect reaches fail"; fi
}
vidkv_fails vidkv_signmean_pm "{-s,+s} 1-bit dequantization under Eq. 5's {0,s}" \
  '\[(exact, (deq )?keys f=[0-9.]+ signmean|bounded, (deq )?keys f=[0-9.]+ fft) ' \
  'FAIL [^ ]*-keys-signmean50 \[exact, .*deq: .*\[VIDKV-K-08\] \(normal signmean: code x >= 0, dequantized to \{0, s\}\)'
grep_out 'FAIL [^ ]*-keys-fft[0-9]+ \[bounded, .*\[VIDKV-B-03\]' "{-s,+s}: the FFT failure names [VIDKV-B-03]"
vidkv_fails vidkv_gamma_half "gamma 0.5 under the declared gamma" \
  '-(values-|alpha-exact|stp-short)' 'FAIL [^ ]*-values-[^ ]* \[exact, values gamma=0\.7 .*tern: .*\[VIDKV-V-02\] \(gamma 0x1\.666666p-1\)'
grep_out 'FAIL [^ ]*-values-raw-[^ ]* \[bounded, .*tern: .*the threshold is decisive there \[VIDKV-B-04\]' "gamma 0.5: a bounded raw case fails naming [VIDKV-B-04]"
vidkv_fails vidkv_scaled_for_raw "scaled ternary under vdeq raw" \
  '\[(exact|bounded), values gamma=[^ ]* raw ' 'FAIL [^ ]* \[exact, values .* raw .*deq: .*\[VIDKV-V-03\] \(vdeq raw: -1, \+0, \+1\)'
vidkv_fails vidkv_raw_for_scaled "raw ternary under vdeq scaled" \
  '\[exact, (values gamma=[^ ]*|deq values) scaled ' 'FAIL [^ ]* \[exact, values .* scaled .*deq: .*\[VIDKV-V-03\] \(vdeq scaled: code \* beta\)'
vidkv_fails vidkv_per_head_for_pooled "a per-head split under the pooled split" \
  '\[(exact|bounded), keys [^ ]* [a-z]+ pooled H=[2-9] ' 'FAIL [^ ]* \[exact, keys [^ ]* [a-z0-9]+ pooled .*mask: .*\[VIDKV-K-01\] \[VIDKV-K-02\] \(split pooled: ranges over all heads\)'
vidkv_fails vidkv_kappend_for_requant "append-only keys under requantize-on-flush" \
  '\[exact, stream [^ ]* decode=[0-9]+ keys requant ' 'FAIL [^ ]*-stream-krequant-.*keys: .*\[VIDKV-W-02\] \(kflush requant: the whole key cache requantized\)'
vidkv_fails vidkv_krequant_for_append "requantize-on-flush keys under append-only" \
  '\[exact, stream [^ ]* decode=[0-9]+ keys append ' 'FAIL [^ ]*-stream-kappend-.*keys: .*\[VIDKV-W-02\] \(kflush append: each block quantized on its own\)'
vidkv_fails vidkv_stream_no_stp "a plain ternary prefill where STP is declared" \
  '\[exact, stream [^ ]* decode=[0-9]+ .* p=0\.[0-9]+ ' 'FAIL [^ ]*-stream-[^ ]*-stp .*values: .*\[VIDKV-W-01\] \(prefill values with STP\)'
# the legal freedom of the bounded level: |v| >= alpha fails the exact alpha-exact cases only
vidkv_fails vidkv_tern_geq "|v| >= alpha at the exact level" \
  '-alpha-exact \[exact, ' 'FAIL [^ ]*-alpha-exact \[exact, .*tern: .*\[VIDKV-V-02\]'
expect 0 "|v| >= alpha PASSES the bounded level ([VIDKV-B-04])" -- $KVQR verify --vectors "$T/vstd.vec" --subject "$SUBJ/vidkv_tern_geq.so" --level bounded
grep_out '^[1-9][0-9]* passed, 0 failed$' "|v| >= alpha: bounded cases pass"
# the FFT path's freedom: a binary64 DFT (codes, scales and keys that differ in the last bits,
# ambiguous components taking the other code) passes every case [VIDKV-B-01..03]
expect 0 "a binary64 FFT PASSES vidkv standard" -- $KVQR verify --vectors "$T/vstd.vec" --subject "$SUBJ/vidkv_fft_double.so"
grep_out '^[1-9][0-9]* passed, 0 failed$' "binary64 FFT: every case passes"
expect 0 "ref-fast results" -- $KVQR run --subject ref-fast --vectors "$T/vstd.vec" -o "$T/vref.res"
expect 0 "binary64 FFT results" -- $KVQR run --subject "$SUBJ/vidkv_fft_double.so" --vectors "$T/vstd.vec" -o "$T/vdbl.res"
ndiff=$(diff <(grep -- '-keys-fft' "$T/vref.res") <(grep -- '-keys-fft' "$T/vdbl.res") | grep -c '^<')
[ "$ndiff" -gt 0 ] && ok "binary64 FFT: $ndiff FFT results differ from ref-fast's (the bounded level is exercised)" \
  || bad "binary64 FFT: no FFT result differs from ref-fast's"
# the check of the derived counts: abnormal other than round(f d) is a file error
sed -E '0,/^case ([^ ]*) level=exact op=vidkv-keys (.*) abnormal=([0-9]+) /s//case \1 level=exact op=vidkv-keys \2 abnormal=1\3 /' "$T/vstd.vec" > "$T/vbad.vec"
expect 2 "a vidkv-keys case whose abnormal is not round(f d) is rejected" -- $KVQR verify --vectors "$T/vbad.vec" --subject ref-fast
grep_out 'abnormal=.*\[VIDKV-K-02\]' "the rejection names [VIDKV-K-02]"

finish vectors.sh
