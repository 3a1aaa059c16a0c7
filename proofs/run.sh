#!/usr/bin/env bash
# proofs/run.sh -- Frama-C WP on the kvq fast path (ref/fast/kivi.c and the
# layout header), function by function, with pinned settings.
#
#   bash proofs/run.sh            (or: make proofs)
#
# Writes proofs/results/<function>.log (the full WP log of that function),
# proofs/results/summary.txt and proofs/results/summary.json, prints the
# totals, and exits non-zero if any goal is unproved that proofs/accepted.txt
# does not list (each accepted goal is an assumption of proofs/TRUSTED.md).
# Exit status: 0 all goals proved or accepted; 1 unaccepted unproved goals;
# 2 tool or setup failure.
set -u
cd "$(dirname "$0")/.."

RES=proofs/results
ACCEPTED=proofs/accepted.txt

# ---- pinned settings (change them only together with the committed results) --
PROVERS=z3,cvc4nofp      # Z3 4.8.12 (native FP) and CVC4 1.8 (floats axiomatized); no Alt-Ergo
TIMEOUT=10               # seconds per goal and prover
PAR=$(nproc 2>/dev/null || echo 2)
FRAMAC=${FRAMAC:-frama-c}
WP_OPTS=(
  -c11
  -cpp-extra-args="-Iinclude -include proofs/libm_spec.h"
  -warn-special-float none        # infinities are handled by the code itself; see TRUSTED.md
  -wp -wp-rte -wp-model Typed+float+int
  -wp-prover "$PROVERS" -wp-timeout "$TIMEOUT"
  -wp-par "$PAR" -wp-cache none
)
SRC=ref/fast/kivi.c

# The proof scope: every function with a contract, in dependency order.
FUNCS=(
  kvq_pow2_small kvq_code_max kvq_code_byte kvq_code_shift
  kvq_unpack_code kvq_pack_code kvq_kivi_residual_after_prefill
  round_up floor_split round_nonneg kvq_round_int kvq_round_f16 read_input group_meta code_of
  group_minmax kvq_kivi_quantize_group kvq_kivi_window_prefill kvq_kivi_window_append
)
LEMMAS=kvq_code_shift_distinct
# Per-function extra WP options (pinned too): the window invariant is a
# conjunction of ten integer facts; split, each closes in well under the limit.
declare -A EXTRA=( [kvq_kivi_window_append]="-wp-split" [kvq_kivi_window_prefill]="-wp-split" )

# `run.sh --summary` recomputes the summary from the committed logs (after an
# edit of accepted.txt) without running WP.
SUMMARY_ONLY=0
[ "${1:-}" = "--summary" ] && SUMMARY_ONLY=1

if [ $SUMMARY_ONLY -eq 0 ]; then
# ---- toolchain ---------------------------------------------------------------
command -v "$FRAMAC" >/dev/null || { echo "run.sh: frama-c not found (ci/setup.sh installs frama-c-base)"; exit 2; }
command -v why3 >/dev/null || { echo "run.sh: why3 not found"; exit 2; }
command -v z3 >/dev/null || { echo "run.sh: z3 not found"; exit 2; }
command -v cvc4 >/dev/null || { echo "run.sh: cvc4 not found"; exit 2; }
# A private Why3 configuration, built afresh on every run (nothing is read from
# or written to ~/.why3.conf): `why3 config detect` finds Z3 and CVC4, then one
# extra prover entry, "CVC4 1.8 (nofp)", runs CVC4 through a copy of Why3's
# cvc4_17 driver without the smt-libv2-floats mapping.  The Debian CVC4 1.8 is
# built without floating-point support (it aborts on any FP literal), so the
# stock driver fails on every goal that mentions a float; without the mapping
# Why3 sends floats as uninterpreted sorts with Why3's own ieee_float axioms
# (sound; see TRUSTED.md [TR-TOOLS]).  Z3 keeps the native FP theory.
W3=$(mktemp -d "${TMPDIR:-/tmp}/kvq-why3.XXXXXX")
trap 'rm -rf "$W3"' EXIT
DD=$(why3 --print-datadir)
for f in "$DD"/drivers/*; do ln -s "$f" "$W3/"; done
sed '/smt-libv2-floats.gen/d' "$DD/drivers/cvc4_16.gen" > "$W3/cvc4_16_nofp.gen"
sed 's/cvc4_16\.gen/cvc4_16_nofp.gen/; s/produced by cvc4_17.drv/produced by kvq cvc4_nofp.drv/' \
    "$DD/drivers/cvc4_17.drv" > "$W3/cvc4_nofp.drv"
export WHY3CONFIG="$W3/why3.conf"
why3 config detect >/dev/null 2>&1 || true
sed -i "s/^memlimit = .*/memlimit = 4000/; s/^running_provers_max = .*/running_provers_max = $PAR/" "$WHY3CONFIG"
CVC4=$(command -v cvc4)
cat >> "$WHY3CONFIG" <<EOF

[prover]
alternative = "nofp"
command = "$CVC4 --stats --tlimit=%t000 --lang=smt2 %f"
command_steps = "$CVC4 --stats --rlimit=%S --lang=smt2 %f"
driver = "$W3/cvc4_nofp.drv"
editor = ""
in_place = false
interactive = false
name = "CVC4"
shortcut = "cvc4nofp"
version = "1.8"
EOF
why3 config list-provers 2>/dev/null | grep -q '^Z3 4\.8' || { echo "run.sh: Why3 does not find Z3 4.8"; exit 2; }
why3 config list-provers 2>/dev/null | grep -q '^CVC4 1\.8 (nofp)' || { echo "run.sh: CVC4 1.8 entry not accepted"; exit 2; }
echo "provers: Z3 $(z3 --version | awk '{print $3}') (native FP), CVC4 $(cvc4 --version | awk 'NR==1{print $5}') (nofp driver), Why3 $(why3 --version | awk '{print $NF}'), $($FRAMAC -version)"

# The byte-field lemmas are decided by enumeration of their finite domain.
CC=${CC:-cc}
"$CC" -std=c11 -O2 -Wall -Wextra -Werror proofs/lemmas_enum.c -o "$W3/lemmas_enum" || exit 2
ENUM_OUT=$("$W3/lemmas_enum") || { echo "$ENUM_OUT"; echo "run.sh: lemma enumeration FAILED"; exit 1; }

mkdir -p "$RES"
rm -f "$RES"/*.log "$RES"/*.txt "$RES"/summary.json
echo "$ENUM_OUT" | tee "$RES/lemmas_enum.txt"
T0=$(date +%s)

# run_wp NAME ARGS...: one WP run, its log in $RES/NAME.log
run_wp() {
  local name=$1; shift
  "$FRAMAC" "${WP_OPTS[@]}" "$SRC" "$@" > "$RES/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'Proved goals:' "$RES/$name.log"; then
    echo "run.sh: frama-c failed on $name (rc=$rc); see $RES/$name.log"; tail -20 "$RES/$name.log"
    exit 2
  fi
}

run_wp lemmas -wp-prop "$LEMMAS"
for f in "${FUNCS[@]}"; do
  echo "== $f"
  # shellcheck disable=SC2086
  run_wp "$f" -wp-fct "$f" ${EXTRA[$f]:-}
done
T1=$(date +%s)
else
  T0=0; T1=0
fi

# ---- summary -----------------------------------------------------------------
python3 - "$RES" "$ACCEPTED" $((T1 - T0)) "$PROVERS" "$TIMEOUT" "$PAR" lemmas "${FUNCS[@]}" <<'EOF'
import json, re, sys
res, accepted_path, secs, provers, timeout, par = sys.argv[1:7]
names = sys.argv[7:]
accepted = {}
for line in open(accepted_path):
    line = line.split('#', 1)[0].strip()
    if line:
        goal, tr = line.split()[:2]
        accepted[goal] = tr
goal_re = re.compile(r'^\[wp\] \[([^\]]+)\] Goal (\S+) : (\S+)')
fail_re = re.compile(r'^\[wp\] \[(Failed|Unknown|Timeout|Stepout)\] Goal (\S+)')
rows, unproved_all, used = [], [], set()
for n in names:
    log = open(f'{res}/{n}.log').read().splitlines()
    tot = proved = None
    for l in log:
        m = re.search(r'Proved goals:\s+(\d+) / (\d+)', l)
        if m: proved, tot = int(m.group(1)), int(m.group(2))
    bad = []
    for l in log:
        m = fail_re.match(l)
        if m: bad.append(m.group(2)); continue
        m = goal_re.match(l)
        if m and m.group(3) != 'Valid': bad.append(m.group(2))
    acc = [g for g in bad if g in accepted]
    used.update(acc)
    una = [g for g in bad if g not in accepted]
    rows.append(dict(function=n, goals=tot, proved=proved, unproved=tot - proved,
                     accepted=len(acc), unaccepted=len(una),
                     unproved_goals=[dict(goal=g, accepted_as=accepted.get(g)) for g in bad]))
    unproved_all += [(n, g, accepted.get(g)) for g in bad]
T = sum(r['goals'] for r in rows); P = sum(r['proved'] for r in rows)
A = sum(r['accepted'] for r in rows); U = sum(r['unaccepted'] for r in rows)
with open(f'{res}/summary.txt', 'w') as o:
    o.write(f'# kvq WP results: provers {provers}, timeout {timeout}s, -wp-rte, Typed+float+int\n')
    o.write(f"{'function':34} {'goals':>6} {'proved':>7} {'unproved':>9} {'accepted':>9}\n")
    for r in rows:
        o.write(f"{r['function']:34} {r['goals']:6d} {r['proved']:7d} {r['unproved']:9d} {r['accepted']:9d}\n")
    o.write(f"{'TOTAL':34} {T:6d} {P:7d} {T-P:9d} {A:9d}\n")
    o.write(f'# unaccepted unproved goals: {U}\n')
    for n, g, tr in unproved_all:
        o.write(f'#   {n}: {g}  ' + (f'accepted [{tr}]' if tr else 'NOT ACCEPTED') + '\n')
stale = sorted(set(accepted) - used)
json.dump(dict(settings=dict(provers=provers, timeout_s=int(timeout), rte=True,
                             model='Typed+float+int', warn_special_float='none'),
               functions=rows,
               totals=dict(goals=T, proved=P, unproved=T - P, accepted=A, unaccepted=U),
               stale_accepted=stale),
          open(f'{res}/summary.json', 'w'), indent=1)
sys.stdout.write(open(f'{res}/summary.txt').read())
if stale:
    print('note: accepted.txt lists goals proved in this run (remove them unless timing-sensitive):', ' '.join(stale))
if int(secs) > 0:
    print(f'wall time: {secs}s on {par} cores')
sys.exit(1 if U else 0)
EOF
