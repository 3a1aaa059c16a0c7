#!/usr/bin/env bash
# proofs/coq/check.sh -- check every Coq file of proofs/coq with coqc (`make coq`).
#
# 1. Every file named in _CoqProject is compiled, in that order, by coqc, in a
#    copy under $B/coq (the source tree is never written to); a file in
#    proofs/coq that _CoqProject does not name is an error.
# 2. No proof is left open: `Admitted`, `admit`, `Axiom`, `Parameter`,
#    `Conjecture` and `Abort` may appear only on the lines ADMITTED.md lists
#    (file:line-free: "file|keyword|name"), each with its justification.
# 3. `Print Assumptions` of every theorem Assumptions.v names may list only the
#    axioms of the Coq standard library's real numbers (ADMITTED.md, section
#    "Axioms of the libraries").
# 4. proofs/accepted.txt: a goal whose third column names `coq:FILE.v#THEOREM`
#    (comma-separated, with or beside `gappa:`) names a `Theorem` of a file
#    checked in 1, and that theorem's comment lists the goal under `Goals:`;
#    every goal a theorem's `Goals:` lists is an accepted goal naming it; and
#    when one goal of a TRUSTED.md entry names a Coq theorem, every goal of
#    that entry does (none accepted without its proof).
# Exit 0 when all hold, 1 when a proof fails, 2 when a tool or file is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${B:-build}
out="$B/coq"
say() { printf 'proofs/coq: %s\n' "$*" >&2; }

command -v coqc >/dev/null 2>&1 || { say "error: coqc not found (ci/setup.sh installs coq, libcoq-flocq, libcoq-interval)"; exit 2; }

[ -f "$here/_CoqProject" ] || { say "error: $here/_CoqProject missing"; exit 2; }
mapfile -t files < <(grep -E '^[A-Za-z0-9_]+\.v$' "$here/_CoqProject")
[ "${#files[@]}" -gt 0 ] || { say "error: _CoqProject names no .v file"; exit 2; }
for f in "$here"/*.v; do
    b=$(basename "$f")
    printf '%s\n' "${files[@]}" | grep -qx "$b" || { say "error: $b is not named in _CoqProject"; exit 2; }
done

rm -rf "$out"; mkdir -p "$out"
for f in "${files[@]}"; do
    [ -f "$here/$f" ] || { say "error: _CoqProject names $f, which does not exist"; exit 2; }
    cp "$here/$f" "$out/$f"
done

# 2. open proofs
status=0
allowed=$(grep -E '^\| *[A-Za-z0-9_]+\.v *\|' "$here/ADMITTED.md" | awk -F'|' '{gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$4); print $2"|"$3"|"$4}' || true)
for f in "${files[@]}"; do
    # strip comments (nesting ignored: proofs/coq does not nest comments) before grepping
    while IFS=: read -r ln text; do
        kw=$(printf '%s' "$text" | grep -oE '\b(Admitted|admit|Axiom|Parameter|Conjecture|Abort)\b' | head -n1)
        name=$(printf '%s' "$text" | sed -nE 's/.*\b(Axiom|Parameter|Conjecture)[[:space:]]+([A-Za-z0-9_]+).*/\2/p')
        if [ -z "$name" ]; then
            # Admitted/admit/Abort: the name is that of the last Lemma/Theorem before the line
            name=$(head -n "$ln" "$out/$f" | grep -oE '^[[:space:]]*(Lemma|Theorem|Corollary|Fact|Remark)[[:space:]]+[A-Za-z0-9_]+' | tail -n1 | awk '{print $2}')
        fi
        if ! printf '%s\n' "$allowed" | grep -qx "$f|$kw|$name"; then
            say "error: $f line $ln: $kw ($name) is not listed in proofs/coq/ADMITTED.md"
            status=1
        fi
    done < <(perl -0pe 's/\(\*.*?\*\)/ my $c=$&; $c =~ s{[^\n]}{ }g; $c /gse' "$out/$f" \
             | grep -nE '\b(Admitted|admit|Axiom|Parameter|Conjecture|Abort)\b' || true)
done

# 1. compile (Assumptions*.v, last in _CoqProject, in step 3)
for f in "${files[@]}"; do
    case "$f" in Assumptions*.v) continue ;; esac
    if ! (cd "$out" && coqc -q -Q . KvqCoq "$f"); then
        say "error: coqc failed on proofs/coq/$f"
        exit 1
    fi
    say "checked $f"
done
[ "$status" -eq 0 ] || exit "$status"

# 4. the accepted WP goals whose content a theorem here proves
accepted="$here/../accepted.txt"
[ -f "$accepted" ] || { say "error: $accepted missing"; exit 2; }
python3 - "$accepted" "$out" "${files[@]}" <<'PY' || status=1
import re, sys
acc, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
errors = []
theorems = {}   # (file, theorem) -> the goals its comment lists under `Goals:`
for f in files:
    text = open(f'{out}/{f}').read()
    for m in re.finditer(r'^Theorem\s+([A-Za-z0-9_]+)', text, re.M):
        before = text[:m.start()].rstrip()
        goals = []
        if before.endswith('*)'):
            comment = before[before.rfind('(*'):]
            if 'Goals:' in comment:
                goals = re.findall(r'typed_[A-Za-z0-9_]+', comment.split('Goals:', 1)[1])
        theorems[(f, m.group(1))] = goals
named = {}      # (file, theorem) -> the accepted goals naming it
entry_coq = {}  # TRUSTED.md entry -> [(goal, names a theorem)]
for n, line in enumerate(open(acc), 1):
    # a comment starts at a `#` that begins a word (the `#` of FILE.v#THEOREM does not)
    body = re.split(r'(?:^|\s)#', line, maxsplit=1)[0].split()
    if len(body) < 2:
        continue
    goal, tr = body[0], body[1]
    refs = [r[len('coq:'):] for col in body[2:] for r in col.split(',') if r.startswith('coq:')]
    entry_coq.setdefault(tr, []).append((goal, n, bool(refs)))
    for r in refs:
        where = f'proofs/accepted.txt:{n}'
        if '#' not in r:
            errors.append(f'{where}: coq:{r} is not FILE.v#THEOREM'); continue
        f, t = r.split('#', 1)
        if f not in files:
            errors.append(f'{where}: {goal} names coq:{r}, but {f} is not a file _CoqProject checks')
        elif (f, t) not in theorems:
            errors.append(f'{where}: {goal} names coq:{r}, but {f} has no Theorem {t}')
        elif goal not in theorems[(f, t)]:
            errors.append(f'{where}: {goal} names coq:{r}, whose comment does not list it under `Goals:`')
        named.setdefault((f, t), set()).add(goal)
for (f, t), goals in sorted(theorems.items()):
    for g in goals:
        if g not in named.get((f, t), ()):
            errors.append(f'proofs/coq/{f}: Theorem {t} lists {g} under `Goals:`, but proofs/accepted.txt '
                          f'does not accept it naming coq:{f}#{t} (proved by WP now? drop it from `Goals:`)')
for tr, rows in entry_coq.items():
    if any(c for _, _, c in rows):
        for g, n, c in rows:
            if not c:
                errors.append(f'proofs/accepted.txt:{n}: {g} ({tr}) names no Coq theorem, '
                              f'while other goals of {tr} do (third column coq:FILE.v#THEOREM)')
for e in errors:
    print(f'proofs/coq: error: {e}', file=sys.stderr)
n = sum(len(v) for v in named.values())
if not errors:
    print(f'proofs/coq: {n} accepted WP goals name {len(named)} theorems, each listing them', file=sys.stderr)
sys.exit(1 if errors else 0)
PY
[ "$status" -eq 0 ] || exit "$status"

# 3. assumptions.  Assumptions.v names every theorem but those of Numbers.v,
# AssumptionsNumbers.v those (Coq-Interval computes with the kernel's primitive
# integers and floats, whose axioms ADMITTED.md allows for them only).
afiles=(Assumptions.v AssumptionsNumbers.v)
for a in "${afiles[@]}"; do
    [ -f "$out/$a" ] || { say "error: _CoqProject does not name $a"; exit 2; }
done
for f in "${files[@]}"; do
    case "$f" in Assumptions*.v) continue ;; esac
    a=Assumptions.v; [ "$f" != Numbers.v ] || a=AssumptionsNumbers.v
    for t in $(grep -oE '^Theorem [A-Za-z0-9_]+' "$out/$f" | awk '{print $2}'); do
        grep -qE "^Print Assumptions $t\.\$" "$out/$a" \
            || { say "error: $f: Theorem $t is not named in $a"; status=1; }
        grep -qF "| \`$t\` ($f)" "$here/README.md" \
            || { say "error: $f: Theorem $t is not in README.md's table"; status=1; }
    done
done
[ "$status" -eq 0 ] || exit "$status"
# the axiom names of a section of ADMITTED.md; an entry `Prefix.*` allows a module's
section() { sed -n "/^## $1/,/^## /p" "$here/ADMITTED.md" | grep -oE '^\| *`[A-Za-z0-9_.*]+`' | tr -d '|` '; }
lib=$(section 'Axioms of the libraries')
prim=$(section 'Axioms of the primitive numbers')
allowed() { # NAME LIST
    printf '%s\n' "$2" | while read -r e; do
        case "$e" in *'.*') [[ "$1" == "${e%\*}"* ]] && { echo y; break; } ;;
                     *) [ "$1" = "$e" ] && { echo y; break; } ;; esac
    done
}
total=0
for a in "${afiles[@]}"; do
    log="$out/${a%.v}.txt"
    (cd "$out" && coqc -q -Q . KvqCoq "$a") > "$log" 2>&1 || { say "error: $a failed"; cat "$log" >&2; exit 1; }
    list=$lib; [ "$a" = Assumptions.v ] || list=$(printf '%s\n%s\n' "$lib" "$prim")
    # Print Assumptions writes each axiom's name at the start of a line, followed
    # by " : type" or by the type on the next lines (indented)
    bad=$(grep -E "^[A-Za-z_][A-Za-z0-9_.']*( :|$)" "$log" | grep -vE '^(Axioms:|Closed under the global context)' \
          | awk '{print $1}' | sort -u | while read -r ax; do
              [ -n "$(allowed "$ax" "$list")" ] || printf '%s\n' "$ax"; done)
    if [ -n "$bad" ]; then
        say "error: the theorems of $a rest on axioms not listed in ADMITTED.md: $(echo $bad)"
        exit 1
    fi
    total=$((total + $(grep -cE '^Print Assumptions' "$out/$a" || true)))
done
say "$total theorems: no assumption beyond the axioms ADMITTED.md lists"
say "all ${#files[@]} files checked"
