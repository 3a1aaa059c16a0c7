#!/usr/bin/env bash
# tests/cert.sh BUILD -- end-to-end tests of `kvq cert`: dumps of the bundled
# CPU subject (kvq_cert_step) pass on every head kind and at every rung; an
# unsound E_key or E_val claim, a perturbed output (sparse and dense rungs), a
# violated coverage condition, a ranking, boundary or value check that fails
# exactly at the recorded rung, a rung 3 above eps_dense and a promotion that
# breaks the rules fail with exit 1 and a reason naming the check; a check
# that fails by less than 2 delta1 is tolerated; malformed dumps exit 2 with
# file:line; reports are written atomically.
# SPEC: [CERT-DUMP-01] [CERT-DUMP-02] [CERT-DUMP-03] [CERT-DUMP-04] [CERT-VER-01]
# SPEC: [CERT-VER-02] [CERT-VER-03] [CERT-CON-01] [CERT-CON-02] [CERT-PROM-01] [CERT-PROM-02]
# SPEC: [CERT-PROM-03] [CERT-SEL-02] [CERT-RANK-01] [CERT-BND-01] [CERT-CHK-01] [CERT-LAD-01]
# SPEC: [CERT-LAD-02] [CERT-LAD-03] [CERT-VER-04] [CERT-CON-03] [CERT-VAR-01] [CERT-VAR-02]
# SPEC: [CERT-VAR-03] [CERT-DUMP-05] [CERT-EK-04] [CERT-EK-05]
set -u
B=${1:-build}
KVQ=$B/san/kvq          # ASan+UBSan build
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"

echo "== tests/cert.sh"
# the bundled subject's certificates pass: five kinds, several seeds and shapes
for kind in sinks concentrated uniform needle constant; do
  for seed in 1 2; do
    expect 0 "make $kind dump seed $seed" -- $KVQ cert --make-dump "$T/$kind-$seed.dump" --seed $seed --kind $kind
  done
done
expect 0 "make d=16 n=7 (residual only)" -- $KVQ cert --make-dump "$T/small.dump" --seed 3 --d 16 --n 7
expect 0 "make d=128 n=200" -- $KVQ cert --make-dump "$T/big.dump" --seed 4 --kind needle --d 128 --n 200
expect 0 "ten fast-path dumps pass" -- $KVQ cert "$T"/*-?.dump "$T/small.dump" "$T/big.dump" --json "$T/r.json" --junit "$T/r.xml"
grep_out '^12 passed, 0 failed$' "closing line 12 passed, 0 failed"
grep_out 'E_key +claimed 0x[0-9a-f]{8} .* sound 0x[0-9a-f]{8}' "report shows claimed and sound E_key"
grep_out 'margin +sound bound - error >= ' "report shows the margin"
if grep -q '"passed": 12' "$T/r.json" && grep -q '"etotal": ' "$T/r.json" && grep -q '"error": ' "$T/r.json" &&
   grep -q '<testsuites tests="12" failures="0"' "$T/r.xml"; then ok "JSON and JUnit reports"; else bad "reports"; fi
# what was judged [VER-REP-05]: format 2, the commit, each dump's SHA-256
h=$(sha256sum "$T/big.dump" | cut -d' ' -f1)
if grep -q '"kvq_report": 2,' "$T/r.json" && grep -q '"kvq_commit": "[^"]' "$T/r.json" &&
   grep -q "\"id\": \"$T/big.dump\", \"dump_sha256\": \"$h\", \"classname\": \"cert\", \"outcome\": \"pass\"" "$T/r.json" &&
   grep -q '<property name="kvq.commit" value="[^"]' "$T/r.xml"; then ok "reports name the commit and each dump's SHA-256"
else bad "report provenance: $(grep -o '"dump_sha256": "[0-9a-f]*"' "$T/r.json" | head -1) want $h"; fi
expect 0 "--dump FILE form" -- $KVQ cert --dump "$T/sinks-1.dump"
expect 0 "make is deterministic" -- $KVQ cert --make-dump "$T/again.dump" --seed 1 --kind sinks
if cmp -s "$T/again.dump" "$T/sinks-1.dump"; then ok "same seed, same dump"; else bad "dumps differ for one seed"; fi

# the step variants [CERT-VAR-01..03] [CERT-DUMP-05]: the paper's own Eq. 15
# certificate passes on a paper step; a step judged as the other variant
# fails; a version-1 dump is a sparse step; an unknown variant is malformed
for kind in sinks concentrated uniform needle; do
  expect 0 "make $kind paper step with the paper's Eq. 15 claim" -- $KVQ cert --make-dump "$T/pc-$kind.dump" --seed 5 --kind $kind --claim-paper
done
expect 0 "the paper's certificate passes on paper steps" -- $KVQ cert "$T"/pc-*.dump
grep -q 'variant=paper' "$T/pc-sinks.dump" && ok "dump declares variant=paper" || bad "no variant field"
expect 0 "make sparse step" -- $KVQ cert --make-dump "$T/sp.dump" --seed 5 --kind concentrated --variant sparse
expect 0 "sparse step passes as sparse" -- $KVQ cert "$T/sp.dump"
sed 's/ variant=sparse/ variant=paper/' "$T/sp.dump" > "$T/sp-as-paper.dump"
expect 1 "sparse step declared paper fails" -- $KVQ cert "$T/sp-as-paper.dump"
sed 's/ variant=paper/ variant=sparse/' "$T/pc-concentrated.dump" > "$T/pc-as-sparse.dump"
expect 1 "paper step with the paper's claim declared sparse fails" -- $KVQ cert "$T/pc-as-sparse.dump"
grep_out 'below sound E_key' "the paper's E_key is below the sparse variant's sound E_key"
sed -e '1s/kvq-cert-dump 2/kvq-cert-dump 1/' -e 's/ variant=sparse//' "$T/sp.dump" > "$T/v1.dump"
expect 0 "a version-1 dump is judged as a sparse step" -- $KVQ cert "$T/v1.dump"
sed -e '1s/kvq-cert-dump 2/kvq-cert-dump 1/' "$T/sp.dump" > "$T/v1-variant.dump"
expect 2 "a version-1 dump with a variant field is malformed" -- $KVQ cert "$T/v1-variant.dump"
sed 's/ variant=sparse/ variant=dense/' "$T/sp.dump" > "$T/badvar.dump"
expect 2 "an unknown variant is malformed" -- $KVQ cert "$T/badvar.dump"
grep_out 'badvar.dump:[0-9]+: params: variant' "the reason names file:line and the field"
sed 's/ variant=sparse//' "$T/sp.dump" > "$T/novar.dump"
expect 2 "a version-2 dump without variant is malformed" -- $KVQ cert "$T/novar.dump"
# INT8 x INT8 scoring: the report says whether the e^{3 Delta} form's condition
# delta1 <= Delta/2 holds [CERT-EK-05]
sed 's/ scoring=fp/ scoring=int8/' "$T/pc-sinks.dump" > "$T/int8.dump"
expect 0 "an int8-scored paper step passes" -- $KVQ cert "$T/int8.dump"
grep_out 'scoring  int8: the e\^\{3 Delta\} form \(Eq. 12\) (is|is not) implied: delta1 0x[0-9a-f.]+p-?[0-9]+ (<=|>) Delta/2' "report states the e^{3 Delta} condition"

# unsound claims [CERT-CON-02]: exit 1, the reason names the bound
expect 0 "make halved E_key" -- $KVQ cert --make-dump "$T/half.dump" --seed 1 --kind sinks --scale-ekey 0.5
expect 1 "halved E_key claim fails" -- $KVQ cert "$T/half.dump" --json "$T/half.json"
grep_out 'half.dump: claim ekey 0x[0-9a-f]{8} \(0x[0-9a-f.]+p-?[0-9]+, [0-9.e-]+\) below sound E_key' "reason names E_key in hex, %a and decimal"
if grep -q '"outcome": "fail", "check": "claims"' "$T/half.json"; then ok "JSON names the failed check"; else bad "JSON check"; fi
# v_tol = 1: no block is promoted by the threshold rule, so E_val > 0
expect 0 "make zero E_val" -- $KVQ cert --make-dump "$T/eval0.dump" --seed 2 --kind constant --vtol 1 --scale-eval 0
expect 1 "zero E_val claim fails" -- $KVQ cert "$T/eval0.dump"
grep_out 'below sound E_val' "reason names E_val"
# a wrong output breaks the contract [CERT-CON-01]
expect 0 "make perturbed output" -- $KVQ cert --make-dump "$T/pert.dump" --seed 2 --kind needle --perturb-output
expect 1 "perturbed output fails the contract" -- $KVQ cert "$T/pert.dump"
grep_out 'pert.dump:[0-9]+: contract violated' "contract violation names file:line of out"
expect 1 "one failing dump among passing ones" -- $KVQ cert "$T/sinks-1.dump" "$T/pert.dump"
grep_out '^1 passed, 1 failed$' "counts"

# every rung [CERT-LAD-01]: forced starts, a budget, tau = 1 (no sparse rung
# can pass the boundary check), eps_dense below the dense E_arith (rung 4)
expect 0 "make rung 1" -- $KVQ cert --make-dump "$T/r1.dump" --seed 2 --start-rung 1
expect 0 "make rung 2" -- $KVQ cert --make-dump "$T/r2.dump" --seed 2 --kind uniform --start-rung 2
expect 0 "make rung 3" -- $KVQ cert --make-dump "$T/r3.dump" --seed 1 --start-rung 3
expect 0 "make rung 4" -- $KVQ cert --make-dump "$T/r4.dump" --seed 1 --kind needle --start-rung 4 --d 128 --n 200
expect 0 "make budget:0 (escalates)" -- $KVQ cert --make-dump "$T/b0.dump" --seed 1 --budget 0
expect 0 "make tau = 1 (escalates to dense)" -- $KVQ cert --make-dump "$T/tau1.dump" --seed 1 --tau 1 --kmin 1 --kmax 1
expect 0 "make eps_dense tiny (rung 4)" -- $KVQ cert --make-dump "$T/ed.dump" --seed 3 --tau 1 --kmin 1 --kmax 1 --eps-dense 1e-30
for r in 1 2 3 4; do
  if grep -q "^select rung=$r " "$T/r$r.dump"; then ok "forced start gives rung $r"; else bad "forced start: $(grep '^select' "$T/r$r.dump")"; fi
done
if grep -q '^select rung=[12] ' "$T/b0.dump" && grep -q 'promote=budget:0' "$T/b0.dump"; then ok "budget:0 escalates to a promoting rung"; else bad "budget:0: $(grep '^select' "$T/b0.dump")"; fi
if grep -q '^select rung=3 blocks=-$' "$T/tau1.dump"; then ok "tau = 1 ends dense at rung 3"; else bad "tau = 1: $(grep '^select' "$T/tau1.dump")"; fi
if grep -q '^select rung=4 blocks=-$' "$T/ed.dump"; then ok "eps_dense below E_arith gives rung 4"; else bad "eps_dense: $(grep '^select' "$T/ed.dump")"; fi
expect 0 "dumps at every rung pass" -- $KVQ cert "$T/r1.dump" "$T/r2.dump" "$T/r3.dump" "$T/r4.dump" "$T/b0.dump" "$T/tau1.dump" "$T/ed.dump"
grep_out '^7 passed, 0 failed$' "seven rung dumps pass"
grep_out 'r3.dump: paper step, d=64 n=100 rung 3, 6 full blocks selected of 6, 0 promoted' "a dense dump is judged (all blocks, nothing promoted)"
# a dense rung with a wrong output fails its contract [CERT-LAD-03]
expect 0 "make perturbed rung 3" -- $KVQ cert --make-dump "$T/p3.dump" --seed 1 --start-rung 3 --perturb-output
expect 1 "perturbed rung-3 output fails" -- $KVQ cert "$T/p3.dump"
grep_out 'p3.dump:[0-9]+: contract violated: .* bound E_arith \(dense rung\)' "dense contract named"
# rung 3 although the declared dense E_arith exceeds eps_dense [CERT-LAD-02]
sed 's/ eps_dense=[0-9a-f]*/ eps_dense=00000001/' "$T/r3.dump" > "$T/ed3.dump"
expect 1 "rung 3 above eps_dense fails the ladder" -- $KVQ cert "$T/ed3.dump"
grep_out 'ed3.dump:[0-9]+: ladder: rung 3 with dense E_arith 0x[0-9a-f]{8} .* above eps_dense 0x00000001' "eps_dense reason"
# a rung-3 claim of a negative E_key is unsound [CERT-CON-02]
sed 's/^claim ekey=[0-9a-f]*/claim ekey=bf800000/' "$T/r3.dump" > "$T/neg3.dump"
expect 1 "negative E_key claim at rung 3 fails" -- $KVQ cert "$T/neg3.dump"
grep_out 'neg3.dump: claim ekey 0xbf800000 .* below sound E_key 0x00000000' "dense E_key is 0"

# check 1: the selector contract [CERT-SEL-02]
sed -e 's/^select rung=0 blocks=.*/select rung=0 blocks=4,5/' -e 's/^promote blocks=.*/promote blocks=4,5/' "$T/sinks-1.dump" > "$T/cov.dump"
expect 1 "a selection that misses the sinks violates coverage" -- $KVQ cert "$T/cov.dump"
grep_out 'cov.dump:[0-9]+: selector: coverage violated: ln odds\(1 - tau\) - ln odds\(alpha\^_T\) in \[-0x[0-9a-f.]+p\+[0-9]+, .*K = 2 is not the cap 6' "coverage reason with the exact margin"
sed -e 's/^select rung=0 blocks=.*/select rung=0 blocks=0/' -e 's/^promote blocks=.*/promote blocks=0/' "$T/sinks-1.dump" > "$T/clamp.dump"
expect 1 "one block below kmin = 2" -- $KVQ cert "$T/clamp.dump"
grep_out 'clamp.dump:[0-9]+: selector: 1 full blocks selected at rung 0, outside \[2, 6\]' "clamp reason"
# promotion rules [CERT-PROM-01..03]
sed 's/^promote blocks=.*/promote blocks=-/' "$T/sinks-1.dump" > "$T/noprom.dump"
expect 1 "threshold rule: a block with eta > vtol nu left unpromoted" -- $KVQ cert "$T/noprom.dump"
grep_out 'noprom.dump: promotion: selected block [0-9]+ is not promoted' "threshold reason"
sed 's/^select rung=2/select rung=1/' "$T/b0.dump" > "$T/prom.dump"
expect 1 "a promotion over budget:0 fails" -- $KVQ cert "$T/prom.dump"
grep_out 'promotion: [0-9]+ blocks promoted, budget 0' "promotion reason"
sed -e 's/^select rung=1 /select rung=2 /' -e 's/^promote blocks=[0-9]*,/promote blocks=/' "$T/r1.dump" > "$T/r2p.dump"
expect 1 "rung 2 with a selected block not promoted" -- $KVQ cert "$T/r2p.dump"
grep_out 'r2p.dump: promotion: selected block [0-9]+ is not promoted .*rung 2' "rung-2 reason"

# check 2: the recorded rung's checks, exactly [CERT-CHK-01]
# ranking: K = 2 is the cap (kmax 2), but the two lightest blocks are selected
expect 0 "make kmax 2" -- $KVQ cert --make-dump "$T/k2.dump" --seed 1 --kmax 2
sed -e 's/^select rung=0 blocks=.*/select rung=0 blocks=4,5/' -e 's/^promote blocks=.*/promote blocks=4,5/' "$T/k2.dump" > "$T/rank.dump"
expect 1 "rung 0 without the heaviest block fails the ranking check" -- $KVQ cert "$T/rank.dump"
grep_out 'rank.dump:[0-9]+: ladder: ranking check fails at rung 0: exact margin lambda_r - U - eps_guard in \[-0x' "ranking reason with the exact margin"
# boundary: tau = 1 leaves no tail mass; claim rung 0 on the dense step's data
sed -e 's/^select rung=3 blocks=-/select rung=0 blocks=0/' -e 's/^promote blocks=-/promote blocks=0/' "$T/tau1.dump" > "$T/bnd.dump"
expect 1 "rung 0 claimed where the boundary check fails" -- $KVQ cert "$T/bnd.dump"
grep_out 'bnd.dump:[0-9]+: ladder: boundary check fails at rung 0: exact margin ln\(\(1 - tau\) e\^eps_guard\) - ln A in \[-inf' "boundary reason"
# value: budget:0, no promotion, claimed accepted at rung 0
sed -e 's/^select rung=[12] /select rung=0 /' -e 's/^promote blocks=.*/promote blocks=-/' "$T/b0.dump" > "$T/val.dump"
expect 1 "rung 0 claimed where the value check fails" -- $KVQ cert "$T/val.dump"
grep_out 'val.dump:[0-9]+: ladder: value check fails at rung 0: exact margin ln\(v_tol sum rho_b nu_b\) - ln E_val in \[-0x' "value reason"
# the 2 delta1 tolerance: eps_guard moves the ranking margin m to about -delta1
# (tolerated, exact bit 0 cleared) and to about -3 delta1 (not tolerated)
$KVQ cert "$T/sinks-1.dump" > "$T/m.txt"
f32hex() { awk -v x="$1" 'BEGIN { e = 0; m = x; while (m >= 2) { m /= 2; e++ } while (m < 1) { m *= 2; e-- }
  f = int((m - 1) * 8388608 + 0.5); if (f >= 8388608) { f = 0; e++ } printf "%08x\n", (e + 127) * 8388608 + f }'; }
rm=$(sed -n 's/.*ranking \([0-9.e+-]*\) .*/\1/p' "$T/m.txt"); tol=$(sed -n 's/.* 2 delta1 \([0-9.e+-]*\);.*/\1/p' "$T/m.txt")
if [ -n "$rm" ] && [ -n "$tol" ]; then
  g1=$(f32hex "$(awk -v m="$rm" -v t="$tol" 'BEGIN { printf "%.17g", m + t / 2 }')")
  g3=$(f32hex "$(awk -v m="$rm" -v t="$tol" 'BEGIN { printf "%.17g", m + 3 * t / 2 }')")
  sed "s/ eps_guard=[0-9a-f]*/ eps_guard=$g1/" "$T/sinks-1.dump" > "$T/tol1.dump"
  sed "s/ eps_guard=[0-9a-f]*/ eps_guard=$g3/" "$T/sinks-1.dump" > "$T/tol3.dump"
  expect 0 "ranking margin -delta1 is within the tolerance" -- $KVQ cert "$T/tol1.dump" --json "$T/tol1.json"
  if grep -q '"checks": 14' "$T/tol1.json"; then ok "record: exact ranking bit cleared, others set"; else bad "record checks: $(grep -o '"checks": [0-9]*' "$T/tol1.json")"; fi
  expect 1 "ranking margin -3 delta1 is not" -- $KVQ cert "$T/tol3.dump"
  grep_out 'tol3.dump:[0-9]+: ladder: ranking check fails at rung 0' "tolerance exceeded named"
else
  bad "no ranking margin in the report"
fi

# malformed dumps [CERT-DUMP-04]: exit 2 with file:line
sed '1s/ 2$/ 3/' "$T/sinks-1.dump" > "$T/v3.dump"
expect 2 "bad version" -- $KVQ cert "$T/v3.dump"
grep_out 'v3.dump:1: unsupported version' "version error names file:line"
head -c 4000 "$T/sinks-1.dump" > "$T/trunc.dump"
expect 2 "truncated dump" -- $KVQ cert "$T/trunc.dump"
grep_out 'trunc.dump:[0-9]+: ' "truncation names file:line"
head -n -1 "$T/sinks-1.dump" > "$T/noend.dump"
expect 2 "missing end line" -- $KVQ cert "$T/noend.dump"
grep_out "noend.dump:[0-9]+: truncated: expected a 'end' line" "missing end named"
awk '/^k 3 /{ $3 = "z" substr($3, 2) } {print}' "$T/sinks-1.dump" > "$T/hex.dump"
expect 2 "bad hex digit" -- $KVQ cert "$T/hex.dump"
grep_out 'hex.dump:[0-9]+: k: bad hex digit in value 0' "hex error names file:line and field"
awk '/^v 5 /{ $3 = substr($3, 2) } {print}' "$T/sinks-1.dump" > "$T/len.dump"
expect 2 "wrong hex length" -- $KVQ cert "$T/len.dump"
grep_out 'len.dump:[0-9]+: v: [0-9]+ hex digits, expected 256' "length error"
sed 's/^params \(.*\) ties=even/params \1/' "$T/sinks-1.dump" > "$T/miss.dump"
expect 2 "missing field" -- $KVQ cert "$T/miss.dump"
grep_out "miss.dump:[0-9]+: params: missing field 'ties'" "missing field named"
sed 's/^claim ekey=\([0-9a-f]*\)/claim ekey=\1 ekey=\1/' "$T/sinks-1.dump" > "$T/dup.dump"
expect 2 "duplicate field" -- $KVQ cert "$T/dup.dump"
grep_out "dup.dump:[0-9]+: claim: field 'ekey' given twice" "duplicate field named"
sed 's/^claim /claim bogus=1 /' "$T/sinks-1.dump" > "$T/unk.dump"
expect 2 "unknown field" -- $KVQ cert "$T/unk.dump"
grep_out "unk.dump:[0-9]+: claim: unknown field 'bogus'" "unknown field named"
sed 's/^k 4 /k 5 /' "$T/sinks-1.dump" > "$T/order.dump"
expect 2 "token out of order" -- $KVQ cert "$T/order.dump"
grep_out 'order.dump:[0-9]+: k: token index .5. out of order, expected 4' "order error"
sed 's/^shape d=64 n=100/shape d=64 n=1000000/' "$T/sinks-1.dump" > "$T/huge.dump"
expect 2 "shape larger than the file" -- $KVQ cert "$T/huge.dump"
grep_out 'huge.dump:[0-9]+: shape: .* needs [0-9]+ bytes' "no allocation trusted from the file"
sed 's/^shape d=64/shape d=65/' "$T/sinks-1.dump" > "$T/shape.dump"
expect 2 "inconsistent shape" -- $KVQ cert "$T/shape.dump"
grep_out 'shape.dump:[0-9]+: shape: d=65' "shape error"
awk '/^out /{ $2 = "7fc00000" substr($2, 9) } {print}' "$T/sinks-1.dump" > "$T/nan.dump"
expect 2 "NaN output is malformed" -- $KVQ cert "$T/nan.dump"
grep_out 'nan.dump:[0-9]+: out: value 0 .* is not finite' "NaN output named"
sed 's/ tau=[0-9a-f]*/ tau=00000000/' "$T/sinks-1.dump" > "$T/tau.dump"
expect 2 "tau = 0 violates a constraint" -- $KVQ cert "$T/tau.dump"
grep_out 'tau.dump:[0-9]+: params: tau' "constraint named"
sed 's/ delta1=[0-9a-f]*/ delta1=7f800000/' "$T/sinks-1.dump" > "$T/d1.dump"
expect 2 "an infinite Phase-1 radius is malformed" -- $KVQ cert "$T/d1.dump"
grep_out 'd1.dump:[0-9]+: params: delta1 inf is not finite' "radius constraint named"
sed 's/^select rung=3 blocks=-/select rung=3 blocks=0/' "$T/r3.dump" > "$T/dsel.dump"
expect 2 "a dense rung with a block list" -- $KVQ cert "$T/dsel.dump"
grep_out 'dsel.dump:[0-9]+: select: rung 3 is dense' "dense selection named"
sed 's/^select rung=0 blocks=\([0-9]*\),/select rung=0 blocks=\1,\1,/' "$T/sinks-1.dump" > "$T/rep.dump"
expect 2 "repeated block" -- $KVQ cert "$T/rep.dump"
grep_out 'rep.dump:[0-9]+: select: blocks: index [0-9]+ repeated' "repeated block named"
{ cat "$T/sinks-1.dump"; echo "q 0000"; } > "$T/after.dump"
expect 2 "content after end" -- $KVQ cert "$T/after.dump"
grep_out "after.dump:[0-9]+: content after 'end'" "trailing content named"
expect 2 "dump that does not exist" -- $KVQ cert "$T/none.dump"
grep_out 'none.dump: cannot open' "open error named"
expect 2 "no dump" -- $KVQ cert
expect 2 "unknown option" -- $KVQ cert --bogus 1
expect 2 "unknown kind" -- $KVQ cert --make-dump "$T/x.dump" --seed 1 --kind nope
ls "$T"/*.tmp.* >/dev/null 2>&1 && bad "temporary files left behind" || ok "no half-written files left"

finish cert.sh
