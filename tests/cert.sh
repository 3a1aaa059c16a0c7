#!/usr/bin/env bash
# tests/cert.sh BUILD -- end-to-end tests of `kvq cert`: dumps of the bundled
# CPU subject (kvq_cert_step) pass on every head kind; an unsound E_key or
# E_val claim and a perturbed output fail with exit 1 and a reason; malformed
# dumps exit 2 with file:line; reports are written atomically.
# SPEC: [CERT-DUMP-01] [CERT-DUMP-02] [CERT-DUMP-03] [CERT-DUMP-04] [CERT-VER-01]
# SPEC: [CERT-VER-02] [CERT-VER-03] [CERT-CON-01] [CERT-CON-02] [CERT-PROM-02]
set -u
B=${1:-build}
KVQ=$B/san/kvq          # ASan+UBSan build
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"

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
expect 0 "--dump FILE form" -- $KVQ cert --dump "$T/sinks-1.dump"
expect 0 "make is deterministic" -- $KVQ cert --make-dump "$T/again.dump" --seed 1 --kind sinks
if cmp -s "$T/again.dump" "$T/sinks-1.dump"; then ok "same seed, same dump"; else bad "dumps differ for one seed"; fi

# unsound claims [CERT-CON-02]: exit 1, the reason names the bound
expect 0 "make halved E_key" -- $KVQ cert --make-dump "$T/half.dump" --seed 1 --kind sinks --scale-ekey 0.5
expect 1 "halved E_key claim fails" -- $KVQ cert "$T/half.dump" --json "$T/half.json"
grep_out 'half.dump: claim ekey 0x[0-9a-f]{8} \(0x[0-9a-f.]+p-?[0-9]+, [0-9.e-]+\) below sound E_key' "reason names E_key in hex, %a and decimal"
if grep -q '"outcome": "fail", "check": "claims"' "$T/half.json"; then ok "JSON names the failed check"; else bad "JSON check"; fi
expect 0 "make zero E_val" -- $KVQ cert --make-dump "$T/eval0.dump" --seed 2 --kind constant --scale-eval 0
expect 1 "zero E_val claim fails" -- $KVQ cert "$T/eval0.dump"
grep_out 'below sound E_val' "reason names E_val"
# a wrong output breaks the contract [CERT-CON-01]
expect 0 "make perturbed output" -- $KVQ cert --make-dump "$T/pert.dump" --seed 2 --kind needle --perturb-output
expect 1 "perturbed output fails the contract" -- $KVQ cert "$T/pert.dump"
grep_out 'pert.dump:[0-9]+: contract violated' "contract violation names file:line of out"
expect 1 "one failing dump among passing ones" -- $KVQ cert "$T/sinks-1.dump" "$T/pert.dump"
grep_out '^1 passed, 1 failed$' "counts"
# promotion over budget [CERT-PROM-02]
sel=$(grep '^select' "$T/sinks-1.dump" | sed 's/.*blocks=\([0-9]*\).*/\1/')
sed "s/^promote blocks=-/promote blocks=$sel/" "$T/sinks-1.dump" > "$T/prom.dump"
expect 1 "a promotion over budget:0 fails" -- $KVQ cert "$T/prom.dump"
grep_out 'promotion: 1 blocks promoted, budget 0' "promotion reason"

# malformed dumps [CERT-DUMP-04]: exit 2 with file:line
sed '1s/ 1$/ 2/' "$T/sinks-1.dump" > "$T/v2.dump"
expect 2 "bad version" -- $KVQ cert "$T/v2.dump"
grep_out 'v2.dump:1: unsupported version' "version error names file:line"
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
