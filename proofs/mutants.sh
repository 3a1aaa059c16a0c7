#!/usr/bin/env bash
# proofs/mutants.sh -- proof mutation testing (make proof-mutants).
#
#   bash proofs/mutants.sh              every mutation of the table below
#   bash proofs/mutants.sh NAME...      only these
#
# Each mutation plants one bug in a scratch copy of the tree (include/, ref/,
# proofs/ copied to a temporary directory; the working files are never
# touched), runs proofs/run.sh there on the runs the bug affects only
# (KVQ_WP_ONLY), and requires the run to FAIL (exit 1: a goal unproved and not
# accepted).  A contract that still proves with the bug planted does not say
# which result is computed.  Prints one line per mutation: its name, the verdict
# (KILLED, or SURVIVED: the run passed) and the unaccepted goals that failed.
# Exit status: 0 every mutation killed; 1 a mutation survived; 2 a mutation
# no longer applies to the source (its pattern is not found), or run.sh failed
# on a tool error (exit 2) in the scratch copy.
set -u
cd "$(dirname "$0")/.."

# name | file | perl substitution (applied once, must change the file) | runs
MUTATIONS=(
"fp8_threshold|include/kvq_fp8.h|s/if \(mag <= maxcode\) return/if (mag <= maxcode + 1u) return/|kvq_fp8_round_bits32"
"kivi_no_clamp|ref/fast/kivi.c|s/if \(c > \(int64_t\)kvq_code_max\(bits\)\) \{/if (0) {/|code_of"
"sage_cmax_clause|include/kvq_sage_layout.h|s/    ensures def: \\\\result == kvq_sage_cmax_l\(bits\);\n//|qk_code"
"pack_off_by_one|include/kvq_layout.h|s/grp\[at\] = \(uint8_t\)\(byte - old \* p \+ code \* p\);/grp[at] = (uint8_t)(byte - old * p + code * p + 1u);/|kvq_pack_code"
"cert_key_floorf|ref/fast/cert.c|s/c = kvq_round_int\(qv, ties\);/c = (int64_t)floorf(qv);/|key_code"
"cert_key_inverted|ref/fast/cert.c|s/    return \(int8_t\)c;\n\}/    return (int8_t)(-1 - c);\n}/|key_code"
"kivi_round_up_inverted|ref/fast/kivi.c|s/if \(d > 0\.5f\) return 1;\n    if \(d < 0\.5f\) return 0;/if (d > 0.5f) return 0;\n    if (d < 0.5f) return 1;/|round_up"
"kivi_code_of_zero|ref/fast/kivi.c|s/    return \(uint32_t\)c;\n\}/    return 0u;\n}/|code_of"
"sage_qk_floorf|ref/fast/sage.c|s/k = \(int32_t\)kvq_round_int\(q, ties\);/k = (int32_t)floorf(q);/|qk_code"
"vidkv_trit_ge|include/kvq_vidkv.h|s/if \(v > alpha\) return 1;/if (v >= alpha) return 1;/|vidkv_layout"
"pkv_ties_highest|ref/fast/pkv.c|s/if \(dj < bd\) \{  /if (dj <= bd) { /|kvq_pkv_nearest"
"kivi_deq_minus_zero|ref/fast/kivi.c|s/float r = fmaf\(cf, s, z\);/float r = fmaf(cf, s, -z);/|deq_value"
"kivi_deq_group_off_by_one|ref/fast/kivi.c|s/scale\[g\], zero\[g\],\n                              shape, g\);/scale[g], zero[g],\n                              shape, g > 0 ? g - 1 : g);/|kvq_kivi_dequantize"
"kivi_deq_elem_off_by_one|ref/fast/kivi.c|s/deq_value\(&y\[kvq_kivi_elem_index\(shape, g, i\)\]/deq_value(\&y[kvq_kivi_elem_index(shape, g, i > 0 ? i - 1 : i)]/|dequantize_group"
"kivi_quant_extent_status|ref/fast/kivi.c|s/if \(!kvq_kivi_shape_ok\(shape\)\) return KVQ_E_SHAPE;\n    n = /if (!kvq_kivi_shape_ok(shape)) return KVQ_E_PARAM;\n    n = /|kvq_kivi_quantize"
"kivi_group_wrong_elem|ref/fast/kivi.c|s/xv = read_input\(v\[at\], pol, &f\);\n        c = code_of/xv = read_input(v[0], pol, &f);\n        c = code_of/|kvq_kivi_quantize_group"
"f16_overflow_gt|ref/fast/kivi.c|s/if \(a >= KVQ_F16_OVF\) \{/if (a > KVQ_F16_OVF) {/|kvq_round_f16"
"mma_cut_floor_as_rz|include/kvq_mma.h|s/        return -w - 1;/        return -w;/|mma_terms"
"sage_attn_no_param_check|ref/fast/sage_attn.c|s/ \x7c\x7c !kvq_sage_attn_ok\(a\)\)\n        return KVQ_E_PARAM;\n    attn_work w;/)\n        return KVQ_E_PARAM;\n    attn_work w;/|sage_attention"
)

want=" $* "
T0=$(date +%s)
rows=() survived=0 broken=0
for m in "${MUTATIONS[@]}"; do
  IFS='|' read -r name file subst runs <<<"$m"
  if [ $# -gt 0 ]; then case "$want" in *" $name "*) ;; *) continue;; esac; fi
  d=$(mktemp -d "${TMPDIR:-/tmp}/kvq-mutant.XXXXXX")
  cp -r include ref proofs "$d"/
  perl -0pi -e "$subst" "$d/$file"
  if cmp -s "$file" "$d/$file"; then
    echo "mutants.sh: mutation $name does not apply: its pattern is not in $file"
    rm -rf "$d"; broken=1; rows+=("$name|NOT APPLIED|-"); continue
  fi
  echo "== $name ($file; runs: $runs)"
  (cd "$d" && KVQ_WP_ONLY="$runs" bash proofs/run.sh > run.out 2>&1); rc=$?
  failed=$(grep 'NOT ACCEPTED' "$d/run.out" | sed 's/^#   //; s/  NOT ACCEPTED//' | awk '{print $2}' | tr '\n' ' ')
  case $rc in
    1) verdict=KILLED;;
    0) verdict=SURVIVED; survived=1; failed="-";;
    *) verdict="ERROR(exit-$rc)";;
  esac
  # a kill is a named goal: exit 1 without one (a failed enumeration, a
  # summary that could not be computed) is an error, not a kill
  if [ "$verdict" = KILLED ] && [ -z "$failed" ]; then verdict="ERROR(exit-1,no-goal)"; fi
  case $verdict in ERROR*) broken=1; failed="see below"; tail -8 "$d/run.out";; esac
  echo "   $verdict ${failed}"
  rows+=("$name|$verdict|${failed% }")
  rm -rf "$d"
done
echo
printf '%-24s %-9s %s\n' mutation verdict 'unproved goals (not accepted)'
for r in "${rows[@]}"; do
  IFS='|' read -r n v g <<<"$r"
  printf '%-24s %-9s %s\n' "$n" "$v" "$g"
done
echo "wall time: $(( $(date +%s) - T0 ))s"

[ $broken -eq 0 ] || exit 2
[ $survived -eq 0 ] || exit 1
exit 0
