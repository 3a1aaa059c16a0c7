#!/usr/bin/env bash
# ci/trace.sh -- requirement traceability [TEST-TRACE-01].
#
#   ci/trace.sh               lists the spec IDs that no test references, and
#                             fails (exit 1) if code or tests cite an ID that
#                             neither spec/ nor the register of assumptions
#                             (proofs/TRUSTED.md, its [TR-*] entries) defines,
#                             or if one ID opens two requirements of spec/
#   ci/trace.sh --where ID... for each ID, or each ID of a family prefix
#                             (SAGE-ATT, SAGE, TR), where it is defined (spec
#                             or TRUSTED.md file:line and the line), mentioned
#                             elsewhere in spec/, implemented (code) and tested
#                             (file:line, a range such as [SAGE-ATT-03..06]
#                             counting for each ID in it); exit 1 if an
#                             argument is neither a defined ID nor the prefix
#                             of one, 2 on a usage error
#
# Tests are tests/, fuzz/, conformance/python/test_*.py, the GPU test and gate
# programs (gpu/**/*_test.cu, *_sweep.cu, *_probe.cu) and the lemma campaign
# (proofs/campaign/*.c); code is the other C, CUDA and Python sources of include/,
# ref/, conformance/ and gpu/; their other files (scripts, reports, the man
# page) are "elsewhere".
set -euo pipefail
cd "$(dirname "$0")/.."
idre='\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+\]'
# classify: "test|code|other<TAB>FILE" for each file name read; files CLASS: those of a class
tree=(include ref conformance gpu tests fuzz proofs/campaign)
classify() {
  awk '{ c = "other"
         if ($0 ~ /^(tests|fuzz)\// || $0 ~ /^proofs\/campaign\/.*\.c$/ || $0 ~ /\/test_[^\/]*\.py$/ || $0 ~ /_(test|sweep|probe)\.cu$/) c = "test"
         else if ($0 ~ /\.(c|h|cu|cuh|py)$/) c = "code"
         print c "\t" $0 }'
}
files() { find "${tree[@]}" -type f 2>/dev/null | LC_ALL=C sort | classify | awk -F'\t' -v w="$1" '$1 == w { print $2 }'; }
defined=$(grep -rhoE "$idre" spec | sort -u)
trusted=$(grep -hoE '^(###|\|) \[TR-[A-Z0-9-]+\]' proofs/TRUSTED.md | grep -oE "$idre" | sort -u)
known=$(printf '%s\n%s\n' "$defined" "$trusted" | sort -u)

# ---- --where ------------------------------------------------------------------
if [ "${1:-}" = --where ]; then
  shift
  if [ $# -eq 0 ]; then
    echo "usage: ci/trace.sh --where ID|PREFIX... (e.g. VER-MERGE-01, SAGE-ATT)" >&2
    exit 2
  fi
  status=0 ids=()
  for a in "$@"; do
    a=${a#[}; a=${a%]}
    if ! [[ $a =~ ^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*$ ]]; then
      echo "trace: '$a' is not a requirement ID or prefix (FAM-AREA-NN, FAM-AREA, FAM)" >&2
      exit 2
    fi
    if grep -qxF "[$a]" <<< "$known"; then ids+=("$a"); continue; fi
    m=$(grep -E "^\[$a-" <<< "$known" | tr -d '[]' || true)
    if [ -n "$m" ]; then
      mapfile -t -O "${#ids[@]}" ids <<< "$m"
      continue
    fi
    echo "trace: [$a] is defined nowhere: no ID of spec/ or proofs/TRUSTED.md is $a or begins $a-"
    where_cited=$(grep -rnF "[$a]" "${tree[@]}" 2>/dev/null | cut -d: -f1,2 | tr '\n' ' ' || true)
    [ -z "$where_cited" ] || echo "  cited in     $where_cited"
    status=1
  done
  [ "${#ids[@]}" -gt 0 ] || exit "$status"
  # every citation: "class<TAB>file:line:[ID]" per ID or range ([ID..NN]) cited
  cites=$(mktemp)
  trap 'rm -f "$cites"' EXIT
  {
    grep -rnoE '\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+(\.\.[0-9]+)?\]' spec | LC_ALL=C sort -t: -k1,1 -k2,2n | sed 's/^/spec\t/'
    grep -nE "^(###|\|) \[TR-" proofs/TRUSTED.md | sed 's/^/trusted\tproofs\/TRUSTED.md:/'
    for c in code test other; do
      files $c | xargs grep -noE '\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+(\.\.[0-9]+)?\]' /dev/null | sed "s/^/$c\t/"
    done
  } > "$cites" || true
  # the definition lines: in spec/, the lines that introduce an ID (a bold
  # label before it, a bold ID, a heading, a table row or list item opening
  # with it); in TRUSTED.md its ### or table entry
  defs=$(grep -rnE '^(- |\| )?\*\*[^*]*\*\* \[[A-Z]|^(- |\| )?\*\*\[[A-Z]|^#+ .*\[[A-Z]|^\| *\[[A-Z]|^ *- \[[A-Z]' spec \
    | LC_ALL=C sort -t: -k1,1 -k2,2n || true)
  printf '%s\n' "${ids[@]}" | awk '!seen[$0]++' | awk -v defsfile=<(echo "$defs") -v cites="$cites" '
    function listed(s,   n, k, f, out, prev) {
      # "file:line file:line ..." -> "file:l1,l2; file2:l3"
      n = split(s, k, " "); out = ""; prev = ""
      for (i = 1; i <= n; i++) {
        f = k[i]; sub(/:[0-9]+$/, "", f)
        ln = k[i]; sub(/^.*:/, "", ln)
        if (f == prev) out = out "," ln
        else { out = out (out == "" ? "" : "; ") k[i]; prev = f }
      }
      return out
    }
    function covers(tok, id,   p, lo, hi, n, r) {
      # [ID] itself, or a range [PREFIX-lo..hi] with PREFIX-n = ID, lo <= n <= hi
      if (tok == "[" id "]") return 1
      if (tok !~ /\.\.[0-9]+\]$/) return 0
      r = substr(tok, 2, length(tok) - 2)
      hi = r; sub(/^.*\.\./, "", hi)
      r = substr(r, 1, length(r) - length(hi) - 2)
      lo = r; sub(/^.*-/, "", lo); p = substr(r, 1, length(r) - length(lo))
      if (lo !~ /^[0-9]+$/ || index(id, p) != 1) return 0
      n = substr(id, length(p) + 1)
      return n ~ /^[0-9]+$/ && n + 0 >= lo + 0 && n + 0 <= hi + 0
    }
    BEGIN {
      while ((getline l < defsfile) > 0) dl[++ndef] = l
      while ((getline l < cites) > 0) {
        split(l, c, "\t"); nc++
        cls[nc] = c[1]; split(c[2], q, ":"); cf[nc] = q[1]; cl[nc] = q[2]
        tok[nc] = c[2]; sub(/^[^:]*:[0-9]+:/, "", tok[nc])
        if (c[1] == "trusted") { t = tok[nc]; match(t, /\[TR-[A-Z0-9-]+\]/); tok[nc] = substr(t, RSTART, RLENGTH); txt[nc] = t }
      }
    }
    {
      id = $0; d = ""; spec = ""; code = ""; test = ""; other = ""
      print "[" id "]"
      for (i = 1; i <= ndef; i++) {
        l = dl[i]; f = l; sub(/:[0-9]+:.*$/, "", f); n = l; sub(/^[^:]*:/, "", n); sub(/:.*$/, "", n)
        t = l; sub(/^[^:]*:[0-9]+:/, "", t)
        # the line introduces its first ID, or the first IDs in a row ("[A], [B].")
        if (!match(t, /\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+\]/)) continue
        rest = substr(t, RSTART); intro = 0
        while (match(rest, /^\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+\]/)) {
          if (substr(rest, 1, RLENGTH) == "[" id "]") intro = 1
          rest = substr(rest, RLENGTH + 1); sub(/^,? ?/, "", rest)
        }
        if (!intro) continue
        # a restatement in spec/bounds/ yields to the line of the family spec
        nd++; dfile[nd] = f; dtext[nd] = sprintf("  defined      %s:%s  %s\n", f, n, length(t) > 100 ? substr(t, 1, 97) "..." : t)
        dkey[nd] = f ":" n; if (f !~ /^spec\/bounds\//) main = 1
      }
      for (i = 1; i <= nd; i++)
        if (!main || dfile[i] !~ /^spec\/bounds\//) { d = d dtext[i]; isdef[dkey[i]] = 1 }
      nd = 0; main = 0
      for (i = 1; i <= nc; i++) {
        if (!covers(tok[i], id)) continue
        key = cf[i] ":" cl[i]
        if (cls[i] == "trusted") {
          d = d sprintf("  defined      %s  %s\n", key, length(txt[i]) > 100 ? substr(txt[i], 1, 97) "..." : txt[i]); continue
        }
        if ((cls[i] SUBSEP key) in once) continue
        once[cls[i], key] = 1
        if (cls[i] == "spec") { if (!(key in isdef)) spec = spec " " key }
        else if (cls[i] == "code") code = code " " key
        else if (cls[i] == "test") test = test " " key
        else other = other " " key
      }
      if (d == "") {
        # no introducing line: the first mention in spec/ defines it
        split(spec, s1, " "); d = "  defined      " s1[1] "  (first mention in spec/)\n"; sub("^ " s1[1], "", spec)
      }
      printf "%s", d
      if (spec != "") print "  in spec      " listed(spec)
      print "  implemented  " (code == "" ? "(no code cites it)" : listed(code))
      print "  tested       " (test == "" ? "(no test cites it)" : listed(test))
      if (other != "") print "  elsewhere    " listed(other)
      delete isdef; delete once
    }'
  exit "$status"
fi

# ---- the trace ------------------------------------------------------------------
# the IDs a file set cites: [ID] and each ID of a range [PREFIX-lo..hi]
cited() {
  xargs grep -hoE '\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+(\.\.[0-9]+)?\]' /dev/null | awk '
    !/\.\./ { print; next }
    { r = substr($0, 2, length($0) - 2); hi = r; sub(/^.*\.\./, "", hi); r = substr(r, 1, length(r) - length(hi) - 2)
      lo = r; sub(/^.*-/, "", lo); p = substr(r, 1, length(r) - length(lo))
      for (i = lo + 0; i <= hi + 0; i++) printf "[%s%0*d]\n", p, length(lo), i }' | sort -u
}
cited_tests=$(files test | cited || true)
cited_all=$(find "${tree[@]}" -type f 2>/dev/null | cited || true)
undefined=$(comm -13 <(echo "$known") <(echo "$cited_all") || true)
untested=$(comm -23 <(echo "$defined") <(echo "$cited_tests") || true)
nd=$(echo "$defined" | grep -c . || true)
nt=$(echo "$untested" | grep -c . || true)
echo "trace: $nd requirement IDs in spec/, $((nd - nt)) referenced by tests, $nt not referenced:"
[ -n "$untested" ] && echo "$untested" | tr '\n' ' ' | fold -s -w 100 | sed 's/^/  /' && echo
# an ID introduced twice (a bold label opening a line of a family spec; the
# restatements in spec/bounds/ excepted) names two requirements
twice=$(grep -rhoE '^(- |\| )?\*\*\[[A-Z][A-Z0-9]*(-[A-Z0-9]+)+\]' spec --exclude-dir=bounds \
  | grep -oE "$idre" | sort | uniq -d || true)
if [ -n "$twice" ]; then
  echo "trace: IDs introduced by more than one requirement in spec/:"
  for id in $twice; do
    echo "  $id  $(grep -rnF "**$id" spec --exclude-dir=bounds | cut -d: -f1,2 | tr '\n' ' ')"
  done
  exit 1
fi
if [ -n "$undefined" ]; then
  echo "trace: IDs cited in code or tests but defined neither in spec/ nor in proofs/TRUSTED.md:"
  echo "$undefined" | sed 's/^/  /'
  exit 1
fi
