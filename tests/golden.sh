#!/usr/bin/env bash
# tests/golden.sh BUILD [--update | --list] -- the vector and results formats
# do not move: every file kvq writes for a fixed input is byte for byte the
# file the committed hashes (tests/golden/formats.sha256) describe.
# SPEC: [VEC-FMT-06] [VER-REG-12] [VER-REP-05]
#
# Covered: gen output of every family the registry lists (kvq ops --families)
# at each level set it generates, for two seeds, and three shards; the results files of ref-fast; the text, JSON and JUnit reports
# of ref-fast and of every bundled wrong subject (SAGE's on the sage standard set, PKV's on the pkv standard
# set).  --update rewrites the hash file (only on purpose: a format change is a
# new format version).
# --list prints the vector files of the family loop and exits.
set -u
B=$(cd "${1:-build}" && pwd)
UPDATE=${2:-}
KVQ=$B/rel/kvq
# the families and their level sets, from the registry
FAMS=$("$KVQ" ops --families) && [ -n "$FAMS" ] || { echo "golden.sh: kvq ops --families failed"; exit 2; }
if [ "$UPDATE" = "--list" ]; then
  while read -r fam sets; do for lv in $sets; do echo "$fam-$lv.vec $fam-$lv-s7.vec"; done; done <<< "$FAMS"
  exit 0
fi
SUBJ=$B/subjects
HERE=$(cd "$(dirname "$0")" && pwd)
SUMS=$HERE/golden/formats.sha256
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$HERE/lib.sh"
cd "$T" || exit 2

echo "== tests/golden.sh"
run() { "$@" >/dev/null 2>"$T/err" || { echo "  (command failed: $*)"; sed 's/^/      /' "$T/err" | head -5; }; }
# verify writes text to stdout and exits 1 for a failing subject: keep both.
# The reports record the machine's items (kvq's commit, the subject's path and
# SHA-256, the device) [VER-REP-05]: KVQ_REPORT_FIXED_PROVENANCE=1, for tests
# only, writes them as fixed text, so that the hashes do not depend on the
# machine (tests/reports.sh checks the items themselves).
report() { # NAME VECTORS SUBJECT [ARGS...]
  local name=$1 vec=$2 subj=$3; shift 3
  KVQ_REPORT_FIXED_PROVENANCE=1 "$KVQ" verify --vectors "$vec" --subject "$subj" --json "$name.json" --junit "$name.xml" "$@" >"$name.txt" 2>"$name.err"
  echo "exit $?" >> "$name.txt"
}

while read -r fam sets; do
  for lv in $sets; do
    run "$KVQ" gen --family "$fam" --level "$lv" -o "$fam-$lv.vec"
    run "$KVQ" gen --family "$fam" --level "$lv" --seed 7 -o "$fam-$lv-s7.vec"
  done
done <<< "$FAMS"
run "$KVQ" gen --family kivi --level smoke --shard 5/16 -o kivi-smoke-sh5of16.vec
run "$KVQ" gen --family kivi --level standard --shard 1/3 -o kivi-standard-sh1of3.vec
run "$KVQ" gen --family cert --level standard --shard 2/5 -o cert-standard-sh2of5.vec
while read -r fam sets; do
  for lv in $sets; do run "$KVQ" run --subject ref-fast --vectors "$fam-$lv.vec" -o "$fam-$lv.res"; done
done <<< "$FAMS"
for fam in kivi cert; do
  v=$fam-standard.vec
  report "rep-$fam-ref-fast" "$v" ref-fast
  for s in broken_ties_away broken_high_first cert_midpoint cert_unsound; do
    report "rep-$fam-$s" "$v" "$SUBJ/$s.so"
  done
  report "rep-$fam-recip_mul-exact" "$v" "$SUBJ/recip_mul.so" --level exact
  report "rep-$fam-recip_mul-bounded" "$v" "$SUBJ/recip_mul.so" --level bounded
done
report rep-sage-ref-fast sage-standard.vec ref-fast
for s in sage_ties_away_int4 sage_per_warp sage_smooth_k_block sage_e5m2_for_e4m3 sage_fp8_nan_at_bound \
         sage_fp8_overflow_swapped sage_pv_f16_accumulate sage_attn_no_rescale; do
  report "rep-sage-$s" sage-standard.vec "$SUBJ/$s.so"
done
report rep-pkv-ref-fast pkv-standard.vec ref-fast
for s in pkv_euclid_for_minmax pkv_ties_highest pkv_centre_mean pkv_threshold_sqrt5_d pkv_resid_wrong_pattern; do
  report "rep-pkv-$s" pkv-standard.vec "$SUBJ/$s.so"
done
KVQ_MISBEHAVE=crash report rep-kivi-misbehave-crash kivi-smoke-sh5of16.vec "$SUBJ/misbehave.so"
report rep-cert-misbehave cert-smoke.vec "$SUBJ/misbehave.so"

sha256sum -- *.vec *.res rep-*.txt rep-*.json rep-*.xml | sort -k2 > "$T/now.sha256"
if [ "$UPDATE" = "--update" ]; then
  mkdir -p "$(dirname "$SUMS")"
  cp "$T/now.sha256" "$SUMS"
  echo "  wrote $(wc -l < "$SUMS") hashes to $SUMS"
  exit 0
fi
if [ ! -s "$SUMS" ]; then bad "no committed hashes ($SUMS)"; finish golden.sh; exit; fi
while read -r want name; do
  got=$(awk -v n="$name" '$2==n {print $1}' "$T/now.sha256")
  if [ -z "$got" ]; then bad "$name: not produced"
  elif [ "$got" = "$want" ]; then ok "$name unchanged"
  else bad "$name: bytes differ from the committed format"; fi
done < "$SUMS"
n_now=$(wc -l < "$T/now.sha256"); n_want=$(wc -l < "$SUMS")
[ "$n_now" = "$n_want" ] && ok "same set of files ($n_now)" || bad "$n_now files produced, $n_want committed"
finish golden.sh
