#!/usr/bin/env bash
# tests/proofgate.sh -- the proof gate's bookkeeping (proofs/gate.py, the
# tool pins of proofs/run.sh) on made-up WP output, without Frama-C:
#   - a goal's statement hash follows its theory and the definitions it uses,
#     not the theory's number or the order of its imports; output that does
#     not pair each goal with its theory is an error (exit 2);
#   - the inventory written from a run equals the run; a goal lost, new,
#     unproved or with another statement fails the comparison, named;
#   - run.sh stops (exit 2) on a tool at another version than the pinned one.
set -u
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
G=proofs/gate.py

echo "== tests/proofgate.sh"

# ---- statements --------------------------------------------------------------
# gen THEORY-NAME USE1 USE2 DEF GOAL CLUSTER-THEORY: a generation pass's
# output (CLUSTER-THEORY optional), three goals: f_a with a theory, f_b closed by Qed, f_c that WP
# cannot translate
gen() {
  cat <<EOF
[wp] 3 goals scheduled
[wp] [Qed] Goal typed_f_ensures_a preprocessing
---------------------------------------------
--- Context 'typed_f' Cluster 'Axiomatic' 
---------------------------------------------
theory ${6:-Axiomatic}
  (* use int.Int *)
  function L_f (x:int) : int = $4
end
[wp:print-generated] 
  theory $1
    (* use $2 *)
    
    (* use $3 *)
    
    goal wp_goal : forall x:int. $5
  end
[wp] [Qed] Goal typed_f_ensures_b preprocessing
[wp] [Qed] Goal typed_f_ensures_b : Valid
[wp] [Qed] Goal typed_f_ensures_c preprocessing
[wp] Failure: Logic type 'sign' undefined
[wp] 3 goals generated
EOF
}
stmt() { python3 $G stmt "$T/gen.log" "$T/$1.stmt" > "$T/out" 2> "$T/err"; }
gen WP int.Int Axiomatic "x + 1" "L_f x > x" > "$T/gen.log"; stmt base
gen WP7 Axiomatic4 int.Int3 "x + 1" "L_f x > x" Axiomatic4 > "$T/gen.log"; stmt renum
gen WP int.Int Axiomatic "x + 2" "L_f x > x" > "$T/gen.log"; stmt def
gen WP int.Int Axiomatic "x + 1" "L_f x >= x" > "$T/gen.log"; stmt goal
# SPEC: [TEST-PROOF-02] -- the statement: the goal's theory and the definitions it uses
if grep -q '^typed_f_ensures_b qed$' "$T/base.stmt" && [ "$(wc -l < "$T/base.stmt")" = 3 ] &&
   grep -q '^typed_f_ensures_c [0-9a-f]\{16\}$' "$T/base.stmt"; then
  ok "a goal Qed closes has the statement qed, one WP cannot translate a hash, one line a goal"
else bad "base.stmt: $(cat "$T/base.stmt")"; fi
if cmp -s "$T/base.stmt" "$T/renum.stmt"; then ok "theory numbers and import order do not change the hash"
else bad "renumbered theory changed the hash"; fi
if ! cmp -s "$T/base.stmt" "$T/def.stmt"; then ok "a changed definition the goal uses changes its hash"
else bad "a changed definition left the hash as it was"; fi
if ! cmp -s "$T/base.stmt" "$T/goal.stmt"; then ok "a changed goal changes its hash"
else bad "a changed goal left the hash as it was"; fi
gen WP int.Int Axiomatic "x + 1" "L_f x > x" | sed '/Goal typed_f_ensures_a preprocessing/d' > "$T/gen.log"
expect 2 "a theory that follows no goal is an error" -- python3 $G stmt "$T/gen.log" "$T/x.stmt"
grep_out 'follows no goal' "the error says what"
[ -e "$T/x.stmt" ] && bad "x.stmt written on error" || ok "nothing written on error"

# ---- the inventory -----------------------------------------------------------
R=$T/res; mkdir -p "$R"
printf 'enum\tproofs/lemmas_enum.c\t\t\t\nf\tsrc.c\tf\t\t steps=1/1\n' > "$T/runs.tsv"
printf 'stamp enum e0\nstamp f 1111\nsource src.c abc\n' > "$T/stamps"
cat > "$T/meta.json" <<'EOF'
{"settings": {"provers": "p", "steps_z3": 1, "steps_cvc4": 1, "steps_of": {}, "timeout_s": 1,
  "rte": true, "model": "m", "warn_special_float": "none"},
 "tools": {"frama-c": "x"}, "commit": "c", "dirty": false}
EOF
printf 'typed_f_ensures_c TR-X\n' > "$T/accepted.txt"
# run LOG-LINES STMT-LINES: the results of run f
run() {
  { echo "[wp] 9 goals scheduled"; printf '%s\n' "$1"
    echo "[wp] Proved goals:    $(printf '%s\n' "$1" | grep -c ': Valid') / $(printf '%s\n' "$1" | grep -c Goal)"
  } > "$R/f.log"
  printf '%s\n' "$2" > "$R/f.stmt"
  echo 1111 > "$R/f.stamp"; echo e0 > "$R/enum.stamp"
}
LOG='[wp] [Qed] Goal typed_f_ensures_a : Valid (5ms)
[wp] [Z3 4.8.12 (pinned)] Goal typed_f_ensures_b : Valid (Qed:1ms) (20ms) (12345)
[wp] [Failed] Goal typed_f_ensures_c'
ST='typed_f_ensures_a qed
typed_f_ensures_b 00000000000000bb
typed_f_ensures_c 00000000000000cc'
report() { python3 $G report "$1" "$R" "$T/accepted.txt" "$T/inv.txt" "$T/runs.tsv" "$T/stamps" "enum f" 0 2 "$T/meta.json"; }
run "$LOG" "$ST"
# SPEC: [TEST-PROOF-02] -- written from a run, the inventory equals it
expect 0 "the inventory is written from a run with every goal proved or accepted" -- report write
if grep -q '^goal f typed_f_ensures_b proved Z3 00000000000000bb$' "$T/inv.txt" &&
   grep -q '^goal f typed_f_ensures_c accepted - 00000000000000cc$' "$T/inv.txt" &&
   grep -q '^stamp f 1111$' "$T/inv.txt"; then ok "inventory lines: goal, status, prover, statement; the stamp"
else bad "inventory: $(grep -v '^#' "$T/inv.txt")"; fi
if grep -v '^#' "$T/inv.txt" | LC_ALL=C sort -c 2>/dev/null; then ok "the inventory is sorted"
else bad "the inventory is not sorted"; fi
cp "$T/inv.txt" "$T/inv0.txt"
expect 0 "the same run compares equal" -- report check
cmp -s "$T/inv.txt" "$T/inv0.txt" && ok "a check does not write the inventory" || bad "a check changed the inventory"
# SPEC: [TEST-PROOF-02] -- each difference fails, named
run "$LOG" "${ST/00000000000000bb/0000000000000bbb}"
expect 1 "a changed statement fails" -- report check
grep_out 'typed_f_ensures_b statement changed' "the changed goal is named"
run "$(printf '%s\n' "$LOG" | sed '/ensures_b/d')" "$(printf '%s\n' "$ST" | sed '/ensures_b/d')"
expect 1 "a lost goal fails" -- report check
grep_out 'typed_f_ensures_b lost' "the lost goal is named"
run "$LOG
[wp] [Qed] Goal typed_f_ensures_d : Valid" "$ST
typed_f_ensures_d qed"
expect 1 "a new goal fails" -- report check
grep_out 'typed_f_ensures_d new, proved' "the new goal is named"
run "${LOG/Goal typed_f_ensures_b : Valid/Goal typed_f_ensures_b : Unknown}" "$ST"
expect 1 "a goal proved in the inventory and unproved now fails" -- report check
grep_out 'typed_f_ensures_b was proved, now unproved' "the goal is named"
grep_out 'typed_f_ensures_b  NOT ACCEPTED' "and it is an unaccepted unproved goal"
expect 1 "the inventory is not written while a goal is unproved and not accepted" -- report write
cmp -s "$T/inv.txt" "$T/inv0.txt" && ok "the inventory is left as it was" || bad "a refused write changed the inventory"
run "${LOG/Goal typed_f_ensures_b : Valid/Goal typed_f_ensures_b : Unknown}" "$ST"
echo 2222 > "$R/f.stamp"
expect 0 "results from another stamp are neither compared nor written" -- report write
grep_out 'note: f: its results .* are from other sources' "the run is named"
cmp -s "$T/inv.txt" "$T/inv0.txt" && ok "the run's inventory lines are kept" || bad "stale results were written"
run "$LOG" "$ST"
: > "$T/accepted.txt"
expect 1 "an accepted goal that accepted.txt no longer lists fails" -- report check
grep_out 'typed_f_ensures_c is accepted in the inventory' "the goal is named"
printf 'typed_f_ensures_c TR-X\n' > "$T/accepted.txt"
run "${LOG/\[Failed\] Goal typed_f_ensures_c/[Qed] Goal typed_f_ensures_c : Valid}" "$ST"
expect 1 "an accepted goal now proved fails (accepted.txt and the inventory to update)" -- report check
grep_out 'typed_f_ensures_c was accepted, now proved' "the goal is named"

# ---- stamps -------------------------------------------------------------------
# SPEC: [TEST-PROOF-03] -- a run's stamp follows the files its source reads and
# the settings, nothing else
mkdir -p "$T/s"
printf '#include "h.h"\nint f(void) { return H; }\n' > "$T/s/a.c"
printf '#define H 1\n' > "$T/s/h.h"; printf '#define O 1\n' > "$T/s/other.h"
printf 'f\t%s\tf\t\t steps=1/1\n' "$T/s/a.c" > "$T/s/runs.tsv"
stamp() { python3 $G stamps "$T/s/runs.tsv" "${1:-settings}" tools | awk '$1 == "stamp" { print $3 }'; }
s0=$(stamp); printf '#define O 2\n' > "$T/s/other.h"; s1=$(stamp)
printf '#define H 2\n' > "$T/s/h.h"; s2=$(stamp); s3=$(stamp other-settings)
if [ -n "$s0" ] && [ "$s0" = "$s1" ]; then ok "a file the source does not read leaves the stamp"
else bad "stamps '$s0' '$s1'"; fi
[ "$s2" != "$s1" ] && ok "a header the source includes changes the stamp" || bad "header change: $s1 $s2"
[ "$s3" != "$s2" ] && ok "the settings change the stamp" || bad "settings change: $s2 $s3"
python3 $G stamps "$T/s/runs.tsv" settings tools > "$T/s/stamps"
grep -q "^source $T/s/h.h [0-9a-f]\{64\}$" "$T/s/stamps" &&
  ok "every source read is listed with its sha256" || bad "no source line for h.h"

# ---- pinned tools --------------------------------------------------------------
# SPEC: [TEST-PROOF-01] -- another version of a tool stops the run, named
mkdir -p "$T/bin"
printf '#!/bin/sh\necho "25.0-beta (Manganese)"\n' > "$T/bin/frama-c"
printf '#!/bin/sh\necho "Why3 platform, version 1.5.1"\n' > "$T/bin/why3"
printf '#!/bin/sh\necho "Z3 version 4.8.11 - 64 bit"\n' > "$T/bin/z3"
printf '#!/bin/sh\necho "This is CVC4 version 1.8"\n' > "$T/bin/cvc4"
chmod +x "$T/bin"/*
expect 2 "a tool at another version stops run.sh" -- env PATH="$T/bin:$PATH" bash proofs/run.sh
grep_out 'z3 is "4.8.11" .*the pinned version is "4.8.12"' "the message names the tool and both versions"
if grep -q 'frama-c is\|why3 is\|cvc4 is' "$T/out"; then bad "a tool at its pinned version was reported"
else ok "only the differing tool is named"; fi

finish tests/proofgate.sh
