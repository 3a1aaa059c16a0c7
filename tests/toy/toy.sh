#!/usr/bin/env bash
# tests/toy/toy.sh BUILD -- a family that kvq has never seen, added the way
# spec/adding-a-family.md says and no other way [FAM-ADD-01] [VER-REG-12]:
# the tree is copied to a scratch directory, the toy family's module
# (tests/toy/toy.c -> conformance/families/toy.c), its public header
# (tests/toy/kvq_toy.h -> include/kvq_toy.h) and its two registry lines
# (conformance/registry.c) are added, kvq is built there, and:
#   - kvq ops lists the family and its operation; kvq ops --families and
#     kvq ops --json describe it (no kernels: "gpu": false);
#   - kvq gen makes its smoke vectors and kvq verify passes them with the
#     built-in subject ref-fast (the toy's reference entry);
#   - tests/golden.sh's family list and make install (the header) pick it up.
# SPEC: [FAM-ADD-01] [VER-REG-01] [VER-REG-06] [VER-REG-12]
#
# The hook for readers in other languages: KVQ_TOY_TREE (the scratch tree),
# KVQ_REGISTRY (its kvq ops --json, written to a file) and KVQ_TOY_VECTORS
# (its toy smoke vectors) are exported, and tests/toy/check_*.py, when there
# are any, run with them (python3 -m unittest style: exit 0 passes).
set -u
B=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$ROOT/tests/lib.sh"
echo "== tests/toy/toy.sh"

# ---- the scratch tree: the working tree's files (tracked and untracked, not
# ignored), and the built objects of build/rel so that only what the toy
# changes is compiled again (timestamps kept)
S=$T/tree
mkdir -p "$S"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp -p --parents -t "$S" 2>/dev/null) \
  || { bad "copying the tree failed"; finish toy.sh; exit; }
mkdir -p "$S/build"
cp -a "$B/rel" "$S/build/rel" || { bad "copying $B/rel failed"; finish toy.sh; exit; }
rm -rf "$S/build/rel/tests"

# ---- the family: its files and two registry lines, nothing else
cp "$HERE/toy.c" "$S/conformance/families/toy.c"
cp "$HERE/kvq_toy.h" "$S/include/kvq_toy.h"
sed -i -e 's/^extern const kvq_family kvq_family_sage;$/&\nextern const kvq_family kvq_family_toy;/' \
       -e '/^static const kvq_family \*const FAMILIES\[\] = {$/,/^};$/s/^};$/    \&kvq_family_toy,\n};/' \
       "$S/conformance/registry.c"
n=$(cd "$S" && diff -r -q "$ROOT/conformance" conformance 2>/dev/null | wc -l)
if [ "$(cd "$S" && diff "$ROOT/conformance/registry.c" conformance/registry.c | grep -c '^>')" = 2 ]; then
  ok "the registry gains two lines"; else bad "the registry edit is not two lines"; fi
[ "$n" = 2 ] && ok "conformance/ differs by registry.c and the module only" || bad "conformance/ differs in $n places"

# ---- build kvq there
if make -C "$S" --no-print-directory -s -j2 B=build build/rel/kvq > "$T/make.log" 2>&1; then ok "kvq builds with the toy family"
else bad "kvq does not build with the toy family"; sed 's/^/      /' "$T/make.log" | tail -20; finish toy.sh; exit; fi
KVQ=$S/build/rel/kvq

# ---- kvq ops, --families, --json
"$KVQ" ops > "$T/ops.txt" 2>&1
grep -q '^toy (spec/toy.md)$' "$T/ops.txt" && grep -q '^  toy-double ' "$T/ops.txt" \
  && ok "kvq ops lists toy and toy-double" || bad "kvq ops does not list the toy family"
"$KVQ" ops --families | grep -qx 'toy smoke' && ok "kvq ops --families: toy smoke" \
  || bad "kvq ops --families: $("$KVQ" ops --families | tr '\n' ';')"
export KVQ_REGISTRY=$T/registry.json
"$KVQ" ops --json -o "$KVQ_REGISTRY"
if grep -q '"name": "toy", "title": "TOY", "spec": "spec/toy.md", "gpu": false,' "$KVQ_REGISTRY" &&
   grep -q '{"key": "x", "type": "a_f32", "role": "input", "count": "n", "finite": true}' "$KVQ_REGISTRY" &&
   grep -q '"valid": "n >= 1 && n <= 4096",' "$KVQ_REGISTRY"; then ok "kvq ops --json describes toy"
else bad "kvq ops --json does not describe toy"; fi
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=[x for x in d["families"] if x["name"]=="toy"];
assert f and f[0]["ops"][0]["name"]=="toy-double" and f[0]["level_sets"]==["smoke"]' "$KVQ_REGISTRY" 2>"$T/err" \
    && ok "the description's toy family reads as JSON" || bad "the description's toy family: $(tail -1 "$T/err")"
fi

# ---- gen and verify with the built-in subject
export KVQ_TOY_VECTORS=$T/toy-smoke.vec
expect 0 "kvq gen --family toy --level smoke" -- "$KVQ" gen --family toy --level smoke -o "$KVQ_TOY_VECTORS"
grep -q ' op=toy-double n=8 status=0 ' "$KVQ_TOY_VECTORS" && grep -Eq ' op=toy-double n=[0-9]+ status=1 ' "$KVQ_TOY_VECTORS" \
  && ok "toy vectors hold status-0 and error cases" || bad "toy vectors lack a status-0 or an error case"
expect 0 "kvq verify: ref-fast passes the toy vectors" -- "$KVQ" verify --vectors "$KVQ_TOY_VECTORS" --subject ref-fast
grep_out '^6 passed, 0 failed$' "toy: 6 passed, 0 failed"
# a wrong result fails naming the field
expect 0 "kvq run: ref-fast's toy results" -- "$KVQ" run --subject ref-fast --vectors "$KVQ_TOY_VECTORS" -o "$T/toy.res"
sed -E '0,/ y=[0-9a-f]{8}/s// y=7f800000/' "$T/toy.res" > "$T/bad.res"
expect 1 "a changed toy result fails" -- "$KVQ" verify --vectors "$KVQ_TOY_VECTORS" --results "$T/bad.res"
grep_out 'FAIL .*y: .*expected' "the toy failure names y"

# ---- golden.sh's family list and make install
(cd "$S" && bash tests/golden.sh build --list) > "$T/golden.list" 2>&1
grep -q '^toy-smoke.vec toy-smoke-s7.vec$' "$T/golden.list" && ok "golden.sh covers toy smoke" \
  || bad "golden.sh's family list lacks toy: $(tr '\n' ' ' < "$T/golden.list")"
if make -C "$S" --no-print-directory -s B=build install DESTDIR="$T/root" PREFIX=/opt/kvq > "$T/install.log" 2>&1 &&
   [ -f "$T/root/opt/kvq/include/kvq/kvq_toy.h" ]; then ok "make install installs include/kvq_toy.h"
else bad "make install does not install the toy's header"; sed 's/^/      /' "$T/install.log" | tail -5; fi
cmp -s "$T/root/opt/kvq/share/kvq/python/registry.json" "$KVQ_REGISTRY" \
  && ok "make install installs the registry description with toy" || bad "the installed registry.json is not kvq ops --json"

# ---- readers in other languages (the hook)
export KVQ_TOY_TREE=$S
checks=$(ls "$HERE"/check_*.py 2>/dev/null)
if [ -n "$checks" ]; then
  for c in $checks; do
    if PYTHONPATH="$S/conformance/python" PYTHONDONTWRITEBYTECODE=1 python3 "$c" > "$T/py.log" 2>&1; then
      ok "$(basename "$c") reads the toy family through KVQ_REGISTRY"
    else bad "$(basename "$c") fails"; sed 's/^/      /' "$T/py.log" | tail -10; fi
  done
else
  echo "  note: no tests/toy/check_*.py: no reader in another language checked here"
fi
finish toy.sh
