#!/usr/bin/env bash
# proofs/run.sh -- Frama-C WP on the kvq fast path (the scope of
# proofs/scope/*.sh: each family's ref/fast/<f>.c, ref/common/fp8.c and the
# layout and FP8 headers), function by function, with pinned settings.
#
#   bash proofs/run.sh            (or: make proofs)
#   KVQ_WP_ONLY="cert" bash proofs/run.sh          only the functions of cert.c
#   KVQ_WP_ONLY="key_code u128_add" bash proofs/run.sh   only these functions
#
# KVQ_WP_ONLY names runs (functions), or source stems (the base name of a
# run's source: kivi, cert, fp8 -- the FP8 header's driver and
# ref/common/fp8.c --, sage, sage_layout, mma -- the accumulator emulator of
# include/kvq_mma.h) for all runs of that file but the lemmas, or "lemmas";
# the logs of the other functions are kept as they are and the summary is
# recomputed over all of them.
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
# The proof scope, one file a part under proofs/scope/ (NN-<part>.sh, run and
# summarised in the order of NN; a family adds its file, this script names
# none).  Each file calls `scope_add SOURCE RUN...` (a run: a function of
# SOURCE, every function with a contract in dependency order) and may set
# FCT_OF[RUN] (the functions of a run that groups several), PROP_OF[RUN] (a run
# that proves properties, -wp-prop) and EXTRA[RUN] (pinned extra options).
declare -A SRC_OF=() FCT_OF=() PROP_OF=() EXTRA=()
ALL_FUNCS=()
scope_add() {
  local src=$1 f; shift
  for f in "$@"; do SRC_OF[$f]=$src; ALL_FUNCS+=("$f"); done
}
for scope in proofs/scope/[0-9][0-9]-*.sh; do
  # shellcheck disable=SC1090
  . "$scope"
done
[ ${#ALL_FUNCS[@]} -gt 0 ] || { echo "run.sh: no proof scope under proofs/scope/"; exit 2; }
# the source stems KVQ_WP_ONLY accepts: kivi, cert, fp8, sage_layout, sage, mma, ...
STEMS=$(for f in "${ALL_FUNCS[@]}"; do basename "${SRC_OF[$f]}" .c; done | awk '!seen[$0]++' | tr '\n' ' ')

# selected NAME: 0 when NAME is to be run (KVQ_WP_ONLY unset, or it names the
# function, its source stem, or "lemmas" for the lemmas run).
ONLY=" $(echo "${KVQ_WP_ONLY:-}" | tr ',' ' ') "
selected() {
  [ -z "${KVQ_WP_ONLY:-}" ] && return 0
  case "$ONLY" in *" $1 "*) return 0;; esac
  [ "$1" != lemmas ] && case "$ONLY" in *" $(basename "${SRC_OF[$1]}" .c) "*) return 0;; esac
  return 1
}
if [ -n "${KVQ_WP_ONLY:-}" ]; then
  for w in $ONLY; do
    case " lemmas $STEMS ${ALL_FUNCS[*]} " in *" $w "*) ;; *)
      echo "run.sh: KVQ_WP_ONLY names \"$w\", which is neither a run of the scope nor a source stem (${STEMS% }) nor lemmas"; exit 2;; esac
  done
fi
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
"$CC" -std=c11 -O2 -Wall -Wextra -Werror proofs/mma_enum.c -o "$W3/mma_enum" || exit 2
MMA_ENUM_OUT=$("$W3/mma_enum") || { echo "$MMA_ENUM_OUT"; echo "run.sh: mma lemma enumeration FAILED"; exit 1; }
ENUM_OUT="$ENUM_OUT
$MMA_ENUM_OUT"

mkdir -p "$RES"
if [ -z "${KVQ_WP_ONLY:-}" ]; then rm -f "$RES"/*.log "$RES"/*.txt "$RES"/summary.json; fi
echo "$ENUM_OUT" | tee "$RES/lemmas_enum.txt"
T0=$(date +%s)

# run_wp NAME SOURCE ARGS...: one WP run, its log in $RES/NAME.log
run_wp() {
  local name=$1 src=$2; shift 2
  "$FRAMAC" "${WP_OPTS[@]}" "$src" "$@" > "$RES/$name.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'Proved goals:' "$RES/$name.log"; then
    echo "run.sh: frama-c failed on $name (rc=$rc); see $RES/$name.log"; tail -20 "$RES/$name.log"
    exit 2
  fi
}

for f in "${ALL_FUNCS[@]}"; do
  selected "$f" || continue
  echo "== $f"
  T2=$(date +%s)
  if [ -n "${PROP_OF[$f]:-}" ]; then
    run_wp "$f" "${SRC_OF[$f]}" -wp-prop "${PROP_OF[$f]}"
  else
  # shellcheck disable=SC2086
  run_wp "$f" "${SRC_OF[$f]}" -wp-fct "${FCT_OF[$f]:-$f}" ${EXTRA[$f]:-}
  fi
  echo "   $(grep -o 'Proved goals: *[0-9]* / [0-9]*' "$RES/$f.log"), $(( $(date +%s) - T2 ))s"
done
T1=$(date +%s)
else
  T0=0; T1=0
fi

# ---- summary -----------------------------------------------------------------
python3 - "$RES" "$ACCEPTED" $((T1 - T0)) "$PROVERS" "$TIMEOUT" "$PAR" "${ALL_FUNCS[@]}" <<'EOF'
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
missing = []
for n in names:
    try:
        log = open(f'{res}/{n}.log').read().splitlines()
    except OSError:
        missing.append(n)
        continue
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
if missing:
    print('run.sh: no log for', ' '.join(missing), '(run them: KVQ_WP_ONLY=...)')
    sys.exit(2)
sys.exit(1 if U else 0)
EOF
