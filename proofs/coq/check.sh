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

# 1. compile (Assumptions.v, last in _CoqProject, in step 3)
for f in "${files[@]}"; do
    [ "$f" != Assumptions.v ] || continue
    if ! (cd "$out" && coqc -q -Q . KvqCoq "$f"); then
        say "error: coqc failed on proofs/coq/$f"
        exit 1
    fi
    say "checked $f"
done
[ "$status" -eq 0 ] || exit "$status"

# 3. assumptions
[ -f "$out/Assumptions.v" ] || { say "error: _CoqProject does not name Assumptions.v"; exit 2; }
for f in "${files[@]}"; do
    [ "$f" != Assumptions.v ] || continue
    for t in $(grep -oE '^Theorem [A-Za-z0-9_]+' "$out/$f" | awk '{print $2}'); do
        grep -qE "^Print Assumptions $t\.\$" "$out/Assumptions.v" \
            || { say "error: $f: Theorem $t is not named in Assumptions.v"; status=1; }
        grep -qF "| \`$t\` ($f)" "$here/README.md" \
            || { say "error: $f: Theorem $t is not in README.md's table"; status=1; }
    done
done
[ "$status" -eq 0 ] || exit "$status"
if [ -f "$out/Assumptions.v" ]; then
    log="$out/assumptions.txt"
    (cd "$out" && coqc -q -Q . KvqCoq Assumptions.v) > "$log" 2>&1 || { say "error: Assumptions.v failed"; cat "$log" >&2; exit 1; }
    lib=$(sed -n '/^## Axioms of the libraries/,/^## /p' "$here/ADMITTED.md" | grep -oE '^\| *`[A-Za-z0-9_.]+`' | tr -d '|` ')
    # Print Assumptions writes each axiom's name at the start of a line, followed
    # by " : type" or by the type on the next lines (indented)
    bad=$(grep -E "^[A-Za-z_][A-Za-z0-9_.']*( :|$)" "$log" | grep -vE '^(Axioms:|Closed under the global context)' \
          | awk '{print $1}' | sort -u | while read -r ax; do
              printf '%s\n' "$lib" | grep -qx "$ax" || printf '%s\n' "$ax"; done)
    if [ -n "$bad" ]; then
        say "error: theorems rest on axioms not listed in ADMITTED.md: $(echo $bad)"
        exit 1
    fi
    n=$(grep -cE '^Print Assumptions' "$out/Assumptions.v" || true)
    say "$n theorems: no assumption beyond the listed library axioms"
fi
say "all ${#files[@]} files checked"
