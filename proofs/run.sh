#!/usr/bin/env bash
# proofs/run.sh -- Frama-C WP on the kvq fast path (ref/fast/kivi.c,
# ref/fast/cert.c, ref/common/fp8.c, ref/fast/sage.c and the layout and FP8
# headers), function by function, with pinned settings.
#
#   bash proofs/run.sh            (or: make proofs)
#   KVQ_WP_ONLY="cert" bash proofs/run.sh          only the functions of cert.c
#   KVQ_WP_ONLY="key_code u128_add" bash proofs/run.sh   only these functions
#
# KVQ_WP_ONLY names functions, or source stems (kivi, cert, fp8 -- the FP8
# header's driver and ref/common/fp8.c --, sage, sage_layout, mma -- the
# accumulator emulator of include/kvq_mma.h) for all functions
# of that file, or "lemmas"; the logs of the other functions are kept as they
# are and the summary is recomputed over all of them.
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
CERT_SRC=ref/fast/cert.c

# The proof scope: every function with a contract, in dependency order.
FUNCS=(
  kvq_pow2_small kvq_code_max kvq_code_byte kvq_code_shift
  kvq_unpack_code kvq_pack_code kvq_kivi_residual_after_prefill
  round_up floor_split round_nonneg kvq_round_int kvq_round_f16 read_input group_meta code_of
  group_minmax kvq_kivi_quantize_group kvq_kivi_window_prefill kvq_kivi_window_append
)
# CERT (ref/fast/cert.c and the CERT index maps of kvq_layout.h).  The tensor
# calls and kvq_cert_quantize_key_block are outside the scope (TRUSTED.md
# [TR-SCOPE]).
# cert_layout is one WP run over the CERT index maps of kvq_layout.h (small
# integer functions; one run saves Frama-C's start-up time 20 times).
CERT_LAYOUT=kvq_cert_full_blocks,kvq_cert_residual_tokens,kvq_cert_blocks,kvq_cert_quant_tokens,\
kvq_cert_block_first,kvq_cert_block_tokens,kvq_cert_in_index,kvq_cert_key_block_bytes,\
kvq_cert_key_code_bytes,kvq_cert_key_block_offset,kvq_cert_key_code_index,\
kvq_cert_key_meta_count,kvq_cert_key_meta_index,kvq_cert_value_groups_per_token,\
kvq_cert_value_group_bytes,kvq_cert_value_groups,kvq_cert_value_code_bytes,\
kvq_cert_value_group,kvq_cert_value_code_offset,kvq_cert_value_channel,kvq_cert_value_group_of
CERT_FUNCS=(
  cert_layout
  kvq_cert_is_f16 kvq_certi_check_f16 key_code kvq_certi_key_meta_ok value_meta_ok
  kvq_certi_value_meta_ok kvq_certi_value_deq
  u128_mul64 u128_add u128_cmp u128_shl fixed24 iabs64 sq_cmp ru_norm24
  up_add up_mul up_gamma
)
# FP8 (the shared module): the static inline functions of include/kvq_fp8.h
# through the driver proofs/fp8.c -- the classifiers and decoders in one run,
# fp8_decode, and the encoder kvq_fp8_round_bits32 that the device kernels
# share -- and the binary16 conversions of ref/common/fp8.c.  The binary32
# conversions kvq_fp8_*_from_f32 are outside the scope (TRUSTED.md [TR-SCOPE]).
FP8_HDR=proofs/fp8.c
FP8_SRC=ref/common/fp8.c
FP8_DECODE=kvq_fp8_e4m3_is_nan,kvq_fp8_e5m2_is_nan,kvq_fp8_e5m2_is_inf,kvq_fp8_e4m3_to_f32,\
kvq_fp8_e5m2_to_f32
FP8_HDR_FUNCS=(fp8_decode kvq_fp8_round_bits32)
FP8_FUNCS=(bits32_of_f16 kvq_fp8_e4m3_from_f16 kvq_fp8_e5m2_from_f16)
# SAGE: include/kvq_sage_layout.h (the per-thread map, its inverse, the mma
# row/column helpers, sizes, the signed code fields and their packing), one run
# through the driver proofs/sage_layout.c; and the per-element helpers of
# ref/fast/sage.c (input checks, the Q/K code and its clamp, the V code).  The
# tensor calls of kvq_sage.h are outside the scope (TRUSTED.md [TR-SCOPE]).
SAGE_LAYOUT_SRC=proofs/sage_layout.c
SAGE_LAYOUT=kvq_sage_shape_ok,kvq_sage_qk_ok,kvq_sage_cmax,kvq_sage_seg,kvq_sage_slots_per_block,\
kvq_sage_blocks,kvq_sage_scale_count,kvq_sage_scale_slot,kvq_sage_slot_size,kvq_sage_slot_token,\
kvq_sage_mma_row,kvq_sage_mma_col,kvq_sage_elems,kvq_sage_code_bytes,kvq_sage_mean_rows,\
kvq_sage_code_field,kvq_sage_code_value,kvq_sage_pack_code,kvq_sage_unpack_code
SAGE_SRC=ref/fast/sage.c
SAGE_FUNCS=(all_finite all_within clamp_code qk_code to_fp8 v_code)
# MMA: the integer parts of the accumulator emulator of include/kvq_mma.h
# through the driver proofs/mma.c: the term builders, bit length, top, below
# and cut in one run (mma_terms), the binary32 rounding kvq_mma_to_f32 in its
# own run, and the lemmas of kvq_mma.h that WP is asked to prove (mma_lemmas: the two
# division lemmas; the three shift lemmas are accepted, TRUSTED.md
# [TR-GOAL-MMA-SHIFT]).  The finite-domain 2^k lemmas are enumerated by
# proofs/mma_enum.c.  kvq_mma_add_f32 and kvq_mma_dot carry contracts but are
# outside the run (TRUSTED.md [TR-SCOPE-MMA]: 59/67 and about 1/3 of 94 goals
# in 130 s and over 5 min; run them by hand with -wp-fct).
MMA_SRC=proofs/mma.c
MMA_TERMS=kvq_mma_fp8_term,kvq_mma_f32_term,kvq_mma_bitlen,kvq_mma_top,kvq_mma_below,kvq_mma_cut
MMA_FUNCS=(mma_terms kvq_mma_to_f32 mma_lemmas)
MMA_LEMMAS=kvq_mma_div_one,kvq_mma_div_half,kvq_mma_shl,kvq_mma_shr,kvq_mma_mask
declare -A SRC_OF=()
for f in "${FUNCS[@]}"; do SRC_OF[$f]=$SRC; done
for f in "${CERT_FUNCS[@]}"; do SRC_OF[$f]=$CERT_SRC; done
for f in "${FP8_HDR_FUNCS[@]}"; do SRC_OF[$f]=$FP8_HDR; done
for f in "${FP8_FUNCS[@]}"; do SRC_OF[$f]=$FP8_SRC; done
SRC_OF[sage_layout]=$SAGE_LAYOUT_SRC
for f in "${SAGE_FUNCS[@]}"; do SRC_OF[$f]=$SAGE_SRC; done
for f in "${MMA_FUNCS[@]}"; do SRC_OF[$f]=$MMA_SRC; done
ALL_FUNCS=("${FUNCS[@]}" "${CERT_FUNCS[@]}" "${FP8_HDR_FUNCS[@]}" "${FP8_FUNCS[@]}" sage_layout
           "${SAGE_FUNCS[@]}" "${MMA_FUNCS[@]}")
LEMMAS=kvq_code_shift_distinct

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
    case " lemmas kivi cert fp8 sage sage_layout mma ${ALL_FUNCS[*]} " in *" $w "*) ;; *)
      echo "run.sh: KVQ_WP_ONLY names \"$w\", which is neither a function of the scope nor kivi/cert/fp8/sage/mma/lemmas"; exit 2;; esac
  done
fi
# Per-function extra WP options (pinned too): the window invariant is a
# conjunction of ten integer facts; split, each closes in well under the limit.
declare -A EXTRA=( [kvq_kivi_window_append]="-wp-split" [kvq_kivi_window_prefill]="-wp-split" )
# the -wp-fct argument of a run (the run's name unless it groups functions)
declare -A FCT_OF=( [cert_layout]="$CERT_LAYOUT" [sage_layout]="$SAGE_LAYOUT" [fp8_decode]="$FP8_DECODE"
                    [mma_terms]="$MMA_TERMS" )

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

if selected lemmas; then run_wp lemmas "$SRC" -wp-prop "$LEMMAS"; fi
for f in "${ALL_FUNCS[@]}"; do
  selected "$f" || continue
  echo "== $f"
  T2=$(date +%s)
  if [ "$f" = mma_lemmas ]; then
    run_wp "$f" "$MMA_SRC" -wp-prop "$MMA_LEMMAS"
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
python3 - "$RES" "$ACCEPTED" $((T1 - T0)) "$PROVERS" "$TIMEOUT" "$PAR" lemmas "${ALL_FUNCS[@]}" <<'EOF'
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
