#!/usr/bin/env bash
# proofs/run.sh -- Frama-C WP on the kvq fast path (the scope of
# proofs/scope/*.sh: each family's ref/fast/<f>.c, ref/common/fp8.c and the
# layout and FP8 headers), run by run, with pinned tools, settings and step
# limits, gated by the goal inventory proofs/inventory.txt.
#
#   bash proofs/run.sh            (make proofs) the runs whose stamp differs
#                                 from the inventory's, compared with it
#   KVQ_WP_FULL=1 bash proofs/run.sh      (make proofs-full) every run
#   KVQ_WP_WRITE=1 bash proofs/run.sh     (make proofs-inventory) the changed
#                                 runs, their goals written to the inventory
#   KVQ_WP_ONLY="cert" bash proofs/run.sh          only the runs of cert.c
#   KVQ_WP_ONLY="key_code u128_add" bash proofs/run.sh   only these runs
#   bash proofs/run.sh --summary  the summary and the inventory comparison
#                                 from the logs in results/, no WP
#
# KVQ_WP_ONLY names runs (functions), or source stems (the base name of a
# run's source: kivi, cert, fp8 -- the FP8 header's driver and
# ref/common/fp8.c --, sage, sage_layout, mma -- the accumulator emulator of
# include/kvq_mma.h) for all runs of that file but the lemmas, or "lemmas";
# the logs of the other runs are kept as they are and the summary is
# recomputed over all of them.
#
# A run's stamp is a hash of the settings below, the tool versions and every
# file its source reads (proofs/gate.py stamps).  Each run writes
# proofs/results/<run>.log (the WP log: every goal, the prover that closed it,
# its time and steps) and <run>.stmt (the statement hash of every goal, from a
# second, generation-only WP pass); then proofs/results/summary.txt and
# summary.json (the table, the settings, tool versions, commit, the sha256 of
# every source and the stamps) are recomputed over all runs.
# Exit status: 0 all goals proved or accepted and the goals of every run rerun
# equal the inventory's (or, KVQ_WP_WRITE, the inventory written); 1 an
# unproved goal that proofs/accepted.txt does not list, a failed enumeration,
# or a difference from the inventory (a goal lost, new, with another status
# or another statement: each named); 2 tool or setup failure (a tool missing
# or not at its pinned version, a frama-c error, a missing log).
set -u
cd "$(dirname "$0")/.."

RES=proofs/results
ACCEPTED=proofs/accepted.txt
INVENTORY=proofs/inventory.txt

# ---- pinned tools: run.sh stops (exit 2) on any other version ----------------
PIN_FRAMAC="25.0-beta (Manganese)"
PIN_WHY3=1.5.1
PIN_Z3=4.8.12
PIN_CVC4=1.8

# ---- pinned settings (change them only together with the inventory) ----------
PROVERS=z3pinned,cvc4nofp  # Z3 4.8.12 (native FP) and CVC4 1.8 (floats axiomatized); no Alt-Ergo
# Step limits per goal and prover: a goal's verdict depends on these counts
# (Z3's rlimit, CVC4's resource units: deterministic for a given task), not on
# the machine's speed or load.  Measured on the scope (README): the proved
# goals take at most 1.8 M Z3 steps but one (11.3 M, kvq_pkv_nearest, which
# sets its own limit in scope/70-pkv.sh) and at most 381 k CVC4 units; Z3
# runs 0.5-6 M steps a second, CVC4 20-200 k, so a goal no prover closes
# costs about 10 s of each on an idle core.
STEPS_Z3=5000000
STEPS_CVC4=500000
TIMEOUT=300              # seconds per goal and prover: a hang guard only, never reached by a goal within its steps
PAR=$(nproc 2>/dev/null || echo 2)
FRAMAC=${FRAMAC:-frama-c}
# WP options of both passes (the proof pass adds the provers and limits, the
# generation pass -wp-gen); -wp-par is the machine's and is not in the stamp
WP_OPTS=(
  -c11
  -cpp-extra-args="-Iinclude -include proofs/libm_spec.h"
  -warn-special-float none        # infinities are handled by the code itself; see TRUSTED.md
  -wp -wp-rte -wp-model Typed+float+int
  -wp-cache none
)
# The proof scope, one file a part under proofs/scope/ (NN-<part>.sh, run and
# summarised in the order of NN; a family adds its file, this script names
# none).  Each file calls `scope_add SOURCE RUN...` (a run: a function of
# SOURCE, every function with a contract in dependency order) and may set
# FCT_OF[RUN] (the functions of a run that groups several), PROP_OF[RUN] (a run
# that proves properties, -wp-prop), EXTRA[RUN] (pinned extra options) and
# STEPS_OF[RUN] ("Z3 CVC4": the run's own step limits, measured).
declare -A SRC_OF=() FCT_OF=() PROP_OF=() EXTRA=() STEPS_OF=()
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
for f in "${!STEPS_OF[@]}"; do
  [[ "${STEPS_OF[$f]}" =~ ^[1-9][0-9]*\ [1-9][0-9]*$ ]] ||
    { echo "run.sh: STEPS_OF[$f]=\"${STEPS_OF[$f]}\" is not \"Z3-STEPS CVC4-STEPS\""; exit 2; }
done
# the source stems KVQ_WP_ONLY accepts: kivi, cert, fp8, sage_layout, sage, mma, ...
STEMS=$(for f in "${ALL_FUNCS[@]}"; do basename "${SRC_OF[$f]}" .c; done | awk '!seen[$0]++' | tr '\n' ' ')

# named NAME: 0 when KVQ_WP_ONLY names the run, its source stem, or "lemmas"
# for the lemmas run.
ONLY=" $(echo "${KVQ_WP_ONLY:-}" | tr ',' ' ') "
named() {
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
MODE=check
[ -n "${KVQ_WP_WRITE:-}" ] && MODE=write
SUMMARY_ONLY=0; STMT_ONLY=0
case "${1:-}" in
  --summary) SUMMARY_ONLY=1; MODE=summary;;
  --stamps) MODE=stamps;;
  --statements) STMT_ONLY=1;;
  "") ;;
  *) echo "run.sh: unknown argument \"$1\" (--summary, --stamps or --statements; the rest is set by KVQ_WP_* variables)"; exit 2;;
esac
[ $# -le 1 ] || { echo "run.sh: one argument at most (--summary, --stamps or --statements)"; exit 2; }
[ $SUMMARY_ONLY -eq 1 ] && [ -n "${KVQ_WP_WRITE:-}" ] &&
  { echo "run.sh: --summary writes no inventory (KVQ_WP_WRITE needs a run)"; exit 2; }

W3=$(mktemp -d "${TMPDIR:-/tmp}/kvq-why3.XXXXXX")
trap 'rm -rf "$W3"' EXIT

# ---- stamps ------------------------------------------------------------------
# The runs, one line each (gate.py's RUNS.tsv): name, source, functions,
# properties, options and step limits; "enum" is the finite-domain enumeration.
steps_of() { echo "${STEPS_OF[$1]:-$STEPS_Z3 $STEPS_CVC4}"; }
{
  printf 'enum\tproofs/lemmas_enum.c proofs/mma_enum.c\t\t\t\n'
  for f in "${ALL_FUNCS[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\n' "$f" "${SRC_OF[$f]}" "${FCT_OF[$f]:-$f}" "${PROP_OF[$f]:-}" \
      "${EXTRA[$f]:-} steps=$(steps_of "$f" | tr ' ' /)"
  done
} > "$W3/runs.tsv"
# The stamp's settings: everything above that can change a goal or a verdict
# (-wp-par cannot; the tool versions are the pinned ones, checked below).
SETTINGS="provers=$PROVERS timeout=$TIMEOUT opts=${WP_OPTS[*]} cvc4=cvc4_17-without-smt-libv2-floats z3=z3_471-seed42"
TOOLS="frama-c $PIN_FRAMAC; why3 $PIN_WHY3; z3 $PIN_Z3; cvc4 $PIN_CVC4"
python3 proofs/gate.py stamps "$W3/runs.tsv" "$SETTINGS" "$TOOLS" > "$W3/stamps" || exit 2
stamp_of() { awk -v r="$1" '$1 == "stamp" && $2 == r { print $3 }' "$2"; }
# `run.sh --stamps`: each run's stamp now, in the inventory and of its results
if [ "$MODE" = stamps ]; then
  printf '%-34s %-16s %-16s %-16s\n' run current inventory results
  for f in enum "${ALL_FUNCS[@]}"; do
    printf '%-34s %-16s %-16s %-16s\n' "$f" "$(stamp_of "$f" "$W3/stamps")" \
      "$( [ -f "$INVENTORY" ] && stamp_of "$f" "$INVENTORY")" "$(cat "$RES/$f.stamp" 2>/dev/null)"
  done
  exit 0
fi
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
DIRTY=false
if [ "$COMMIT" != unknown ] &&
   ! git diff --quiet HEAD -- $(awk '$1 == "source" { print $2 }' "$W3/stamps") proofs/run.sh proofs/gate.py proofs/scope proofs/accepted.txt 2>/dev/null; then
  DIRTY=true
fi
# the steps of each run, for the summary: {"run": [z3, cvc4]} for the runs with their own
STEPS_JSON=$(for f in "${!STEPS_OF[@]}"; do echo "\"$f\": [${STEPS_OF[$f]/ /, }]"; done | paste -sd, -)
cat > "$W3/meta.json" <<EOF
{"settings": {"provers": "$PROVERS", "steps_z3": $STEPS_Z3, "steps_cvc4": $STEPS_CVC4,
  "steps_of": {$STEPS_JSON}, "timeout_s": $TIMEOUT, "rte": true, "model": "Typed+float+int",
  "warn_special_float": "none"},
 "tools": {"frama-c": "$PIN_FRAMAC", "why3": "$PIN_WHY3", "z3": "$PIN_Z3", "cvc4": "$PIN_CVC4"},
 "commit": "$COMMIT", "dirty": $DIRTY}
EOF

RERUN=""
T0=0; T1=0
if [ $SUMMARY_ONLY -eq 0 ]; then
# ---- toolchain ---------------------------------------------------------------
for t in "$FRAMAC" why3 z3 cvc4; do
  command -v "$t" >/dev/null || { echo "run.sh: $t not found (ci/setup.sh installs frama-c-base, why3, z3, cvc4)"; exit 2; }
done
have_framac=$("$FRAMAC" -version 2>/dev/null)
have_why3=$(why3 --version 2>/dev/null | awk '{print $NF}')
have_z3=$(z3 --version 2>/dev/null | awk '{print $3}')
have_cvc4=$(cvc4 --version 2>/dev/null | awk 'NR==1{print $5}')
bad=0
for t in "frama-c|$have_framac|$PIN_FRAMAC" "why3|$have_why3|$PIN_WHY3" "z3|$have_z3|$PIN_Z3" "cvc4|$have_cvc4|$PIN_CVC4"; do
  IFS='|' read -r name have pin <<< "$t"
  if [ "$have" != "$pin" ]; then
    echo "run.sh: $name is \"$have\" ($(command -v "${name/frama-c/$FRAMAC}")), the pinned version is \"$pin\""; bad=1
  fi
done
[ $bad -eq 0 ] || { echo "run.sh: the inventory holds for the pinned tools only (proofs/run.sh, PIN_*)"; exit 2; }
echo "tools: Frama-C $have_framac, Why3 $have_why3, Z3 $have_z3 (native FP), CVC4 $have_cvc4 (nofp driver)"
echo "steps per goal: Z3 $STEPS_Z3, CVC4 $STEPS_CVC4$(for f in "${!STEPS_OF[@]}"; do printf '; %s: Z3 %s, CVC4 %s' "$f" ${STEPS_OF[$f]}; done); hang guard ${TIMEOUT}s"

# A private Why3 configuration, built afresh on every run (nothing is read from
# or written to ~/.why3.conf): `why3 config detect` finds Z3 and CVC4, then two
# prover entries of our own.  "CVC4 1.8 (nofp)" runs CVC4 through a copy of
# Why3's cvc4_17 driver without the smt-libv2-floats mapping: the Debian CVC4
# 1.8 is built without floating-point support (it aborts on any FP literal),
# so the stock driver fails on every goal that mentions a float; without the
# mapping Why3 sends floats as uninterpreted sorts with Why3's own ieee_float
# axioms (sound; see TRUSTED.md [TR-TOOLS]).  Its step limit is WP's
# -wp-steps.  "Z3 4.8.12 (pinned)" is Why3's own Z3 entry (driver z3_471, the
# same seeds) with the Z3 step limit written in: WP passes one -wp-steps to
# every prover, and Z3 counts 10-30 times more steps than CVC4 on the same
# goal; one configuration a Z3 limit (why3-<steps>.conf).
DD=$(why3 --print-datadir)
for f in "$DD"/drivers/*; do ln -s "$f" "$W3/"; done
sed '/smt-libv2-floats.gen/d' "$DD/drivers/cvc4_16.gen" > "$W3/cvc4_16_nofp.gen"
sed 's/cvc4_16\.gen/cvc4_16_nofp.gen/; s/produced by cvc4_17.drv/produced by kvq cvc4_nofp.drv/' \
    "$DD/drivers/cvc4_17.drv" > "$W3/cvc4_nofp.drv"
export WHY3CONFIG="$W3/base.conf"
why3 config detect >/dev/null 2>&1 || true
sed -i "s/^memlimit = .*/memlimit = 4000/; s/^running_provers_max = .*/running_provers_max = $PAR/" "$WHY3CONFIG"
CVC4=$(command -v cvc4); Z3=$(command -v z3)
# why3_conf Z3-STEPS: the configuration file for that Z3 limit
why3_conf() {
  local c="$W3/why3-$1.conf"
  [ -f "$c" ] && { echo "$c"; return; }
  cp "$W3/base.conf" "$c"
  cat >> "$c" <<EOF

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

[prover]
alternative = "pinned"
command = "$Z3 -smt2 -T:%t sat.random_seed=42 nlsat.randomize=false smt.random_seed=42 -st %f"
command_steps = "$Z3 -smt2 sat.random_seed=42 nlsat.randomize=false smt.random_seed=42 -st rlimit=$1 %f"
driver = "$DD/drivers/z3_471.drv"
editor = ""
in_place = false
interactive = false
name = "Z3"
shortcut = "z3pinned"
version = "4.8.12"
EOF
  echo "$c"
}
export WHY3CONFIG=$(why3_conf "$STEPS_Z3")
why3 config list-provers 2>/dev/null | grep -q '^Z3 4\.8\.12 (pinned)' || { echo "run.sh: Why3 does not accept the Z3 4.8.12 entry"; exit 2; }
why3 config list-provers 2>/dev/null | grep -q '^CVC4 1\.8 (nofp)' || { echo "run.sh: Why3 does not accept the CVC4 1.8 entry"; exit 2; }

# ---- what to run ---------------------------------------------------------------
# KVQ_WP_ONLY: the runs it names; KVQ_WP_FULL: every run; otherwise every run
# whose results in results/ are not from its current stamp (RUN.stamp: the
# stamp its log and statements were written under), but a run without results
# whose stamp is the inventory's (a clone without results/): the inventory's
# goals stand for it.  An interrupted run resumes where it stopped.
mkdir -p "$RES"
if [ -n "${KVQ_WP_FULL:-}" ] && [ -z "${KVQ_WP_ONLY:-}" ]; then
  rm -f "$RES"/*.log "$RES"/*.stmt "$RES"/*.stamp "$RES"/*.txt "$RES"/summary.json
fi
touch "$W3/inv"; [ -f "$INVENTORY" ] && cp "$INVENTORY" "$W3/inv"
current() {  # current RUN RESULT-FILE...: RUN's results exist and are from its stamp
  local r=$1 f; shift
  for f in "$@"; do [ -f "$f" ] || return 1; done
  [ "$(cat "$RES/$r.stamp" 2>/dev/null)" = "$(stamp_of "$r" "$W3/stamps")" ]
}
in_inventory() {  # in_inventory RUN FILE: no results, and the inventory has RUN's stamp
  [ ! -f "$2" ] && [ "$(stamp_of "$1" "$W3/inv")" = "$(stamp_of "$1" "$W3/stamps")" ]
}
for f in "${ALL_FUNCS[@]}"; do
  if [ $STMT_ONLY -eq 1 ]; then  # --statements: the runs whose results are current
    { [ -z "${KVQ_WP_ONLY:-}" ] || named "$f"; } && current "$f" "$RES/$f.log" "$RES/$f.stmt" || continue
  elif [ -n "${KVQ_WP_ONLY:-}" ]; then named "$f" || continue
  elif [ -z "${KVQ_WP_FULL:-}" ]; then
    current "$f" "$RES/$f.log" "$RES/$f.stmt" && continue
    in_inventory "$f" "$RES/$f.log" && continue
  fi
  RERUN="$RERUN $f"
done
if [ $STMT_ONLY -eq 0 ] && { [ -n "${KVQ_WP_FULL:-}" ] ||
   ! { current enum "$RES/lemmas_enum.txt" || in_inventory enum "$RES/lemmas_enum.txt"; }; }; then
  RERUN="enum$RERUN"
fi
if [ -z "$RERUN" ]; then
  echo "run.sh: nothing to prove: every run's results (or, without results, the inventory) are from its current stamp (make proofs-full proves every run)"
fi

# The byte-field lemmas are decided by enumeration of their finite domain.
if [[ " $RERUN " == *" enum "* ]]; then
  CC=${CC:-cc}
  "$CC" -std=c11 -O2 -Wall -Wextra -Werror proofs/lemmas_enum.c -o "$W3/lemmas_enum" || exit 2
  ENUM_OUT=$("$W3/lemmas_enum") || { echo "$ENUM_OUT"; echo "run.sh: lemma enumeration FAILED"; exit 1; }
  "$CC" -std=c11 -O2 -Wall -Wextra -Werror proofs/mma_enum.c -o "$W3/mma_enum" || exit 2
  MMA_ENUM_OUT=$("$W3/mma_enum") || { echo "$MMA_ENUM_OUT"; echo "run.sh: mma lemma enumeration FAILED"; exit 1; }
  printf '%s\n%s\n' "$ENUM_OUT" "$MMA_ENUM_OUT" | tee "$RES/lemmas_enum.txt"
  stamp_of enum "$W3/stamps" > "$RES/enum.stamp"
fi
T0=$(date +%s)

# run_wp NAME SOURCE ARGS...: one WP run, its log in $RES/NAME.log, then the
# generation pass (one goal at a time, no prover: -wp-par 1 keeps each goal's
# printed theory next to its name), the statement hashes in $RES/NAME.stmt.
# With --statements (STMT_ONLY) only the generation pass, for runs whose
# results are current: the statement hashes again, after a change of
# gate.py's hashing, without proving anything again.
run_wp() {
  local name=$1 src=$2 rc; shift 2
  if [ $STMT_ONLY -eq 0 ]; then
    rm -f "$RES/$name.stamp"
    local z3 cvc4; read -r z3 cvc4 <<< "$(steps_of "$name")"
    WHY3CONFIG=$(why3_conf "$z3") "$FRAMAC" "${WP_OPTS[@]}" -wp-prover "$PROVERS" -wp-steps "$cvc4" \
      -wp-timeout "$TIMEOUT" -wp-par "$PAR" "$src" "$@" > "$RES/$name.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q 'Proved goals:' "$RES/$name.log"; then
      echo "run.sh: frama-c failed on $name (rc=$rc); see $RES/$name.log"; tail -20 "$RES/$name.log"
      exit 2
    fi
  fi
  # the statements are the goals' own: without the -wp-auto tactic (the
  # proof pass's), whose subgoals would print theories of their own
  local gen=() skip=0 a
  for a in "$@"; do
    if [ $skip -eq 1 ]; then skip=0; continue; fi
    if [ "$a" = -wp-auto ]; then skip=1; continue; fi
    gen+=("$a")
  done
  "$FRAMAC" "${WP_OPTS[@]}" -wp-prover z3pinned -wp-par 1 -wp-gen -wp-msg-key print-generated,prover \
    -wp-debug 1 "$src" "${gen[@]}" > "$W3/gen.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "run.sh: the generation pass of $name failed (rc=$rc)"; tail -20 "$W3/gen.log"; exit 2
  fi
  python3 proofs/gate.py stmt "$W3/gen.log" "$RES/$name.stmt" || exit 2
  stamp_of "$name" "$W3/stamps" > "$RES/$name.stamp"
}

for f in "${ALL_FUNCS[@]}"; do
  [[ " $RERUN " == *" $f "* ]] || continue
  echo "== $f"
  T2=$(date +%s)
  if [ -n "${PROP_OF[$f]:-}" ]; then
    # shellcheck disable=SC2086
    run_wp "$f" "${SRC_OF[$f]}" -wp-prop "${PROP_OF[$f]}" ${EXTRA[$f]:-}
  else
  # shellcheck disable=SC2086
  run_wp "$f" "${SRC_OF[$f]}" -wp-fct "${FCT_OF[$f]:-$f}" ${EXTRA[$f]:-}
  fi
  echo "   $(grep -o 'Proved goals: *[0-9]* / [0-9]*' "$RES/$f.log")$([ $STMT_ONLY -eq 1 ] && echo " (statements only)"), $(( $(date +%s) - T2 ))s"
done
T1=$(date +%s)
fi

# ---- summary and inventory (proofs/gate.py report) -----------------------------
python3 proofs/gate.py report "$MODE" "$RES" "$ACCEPTED" "$INVENTORY" "$W3/runs.tsv" "$W3/stamps" \
  "$RERUN" $((T1 - T0)) "$PAR" "$W3/meta.json"
