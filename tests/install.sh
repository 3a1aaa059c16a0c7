#!/usr/bin/env bash
# tests/install.sh BUILD [MAKE] -- `make install DESTDIR=... PREFIX=...` into a
# scratch root, then use what was installed as a user would:
#   - the files are where the Makefile says (bin, lib, include/kvq, the man
#     page, lib/pkgconfig/kvq.pc, share/kvq/python/kvqio.py);
#   - pkg-config finds kvq (PKG_CONFIG_PATH into the root, the root as sysroot)
#     and a small C program built with `pkg-config --cflags --libs kvq` against
#     the installed headers and library quantizes a tensor with
#     kvq_kivi_quantize (status KVQ_OK; KVQ_E_PARAM for bits=3) and checks a
#     value with the MPFR path (kvq_exact_kivi_deq_within);
#   - the installed kvq and kvqio run;
#   - the man page renders without warnings (man -l, and groff -man -ww).
set -u
B=$(cd "${1:-build}" && pwd)
MAKE_CMD=${2:-make}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$HERE/lib.sh"
DEST=$T/root
PFX=/opt/kvq-test
P=$DEST$PFX

echo "== tests/install.sh"
expect 0 "make install DESTDIR=... PREFIX=$PFX" -- $MAKE_CMD -C "$ROOT" --no-print-directory -s install \
  B="$B" DESTDIR="$DEST" PREFIX="$PFX"
for f in bin/kvq lib/libkvq.a include/kvq/kvq.h include/kvq/kvq_layout.h include/kvq/kvq_exact.h \
         include/kvq/kvq_cert.h include/kvq/kvq_bits.h include/kvq/kvq_subject.h \
         share/man/man1/kvq.1 lib/pkgconfig/kvq.pc share/kvq/python/kvqio.py; do
  [ -f "$P/$f" ] && ok "installed $f" || bad "missing $PFX/$f"
done
# every header of include/ (a family's included) and the registry description
nh=0; nmiss=0
for h in "$ROOT"/include/*.h; do
  nh=$((nh + 1))
  [ -f "$P/include/kvq/$(basename "$h")" ] || { bad "missing $PFX/include/kvq/$(basename "$h")"; nmiss=$((nmiss + 1)); }
done
[ $nmiss = 0 ] && ok "installed every header of include/ ($nh)"
cmp -s "$P/share/kvq/python/registry.json" "$ROOT/conformance/registry.json" && ok "installed share/kvq/python/registry.json" \
  || bad "share/kvq/python/registry.json is not conformance/registry.json"
if find "$DEST" -path "$P" -prune -o -type f -print | grep -q .; then
  bad "files outside PREFIX: $(find "$DEST" -path "$P" -prune -o -type f -print | head -3)"
else ok "nothing installed outside DESTDIR/PREFIX"; fi

# pkg-config: the .pc names PREFIX; the sysroot maps it into DESTDIR
export PKG_CONFIG_PATH=$P/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST PKG_CONFIG_LIBDIR=$P/lib/pkgconfig
if ! command -v pkg-config >/dev/null; then bad "pkg-config is not installed"; fi
flags=$(pkg-config --cflags --libs kvq 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ "$(echo $flags)" = "-I$P/include/kvq -L$P/lib -lkvq -lmpfr -lgmp -lm" ]; then
  ok "pkg-config --cflags --libs kvq: $flags"
else bad "pkg-config --cflags --libs kvq (exit $rc): '$flags' $(cat "$T/err")"; fi
want=$("$B/rel/kvq" version | awk '{print $2}')
got=$(pkg-config --modversion kvq 2>/dev/null)
[ "$got" = "$want" ] && ok "pkg-config --modversion kvq: $got" || bad "pkg-config --modversion kvq: '$got', kvq says '$want'"
grep -qx "prefix=$PFX" "$P/lib/pkgconfig/kvq.pc" && ok "kvq.pc: prefix=$PFX" || bad "kvq.pc does not say prefix=$PFX"

cat > "$T/use_kvq.c" <<'EOF'
/* A user's program: the installed headers and library, through pkg-config. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <kvq.h>
#include <kvq_exact.h>
#include <kvq_subject.h>

int main(void)
{
    enum { T = 32, D = 4 };
    kvq_kivi_shape sh = { 4, 16, KVQ_GROUP_CHANNEL, KVQ_META_F32, T, D };
    float x[T * D], y[T * D], scale[8], zero[8];
    uint8_t codes[64];
    uint32_t fl = 0xFFFFFFFFu, df = 0;
    kvq_status st;
    for (int e = 0; e < T * D; e++) x[e] = (float)((e * 37) % 101) / 16.0f - 3.0f;
    if (kvq_kivi_code_bytes(&sh) != sizeof codes || kvq_kivi_groups(&sh) != 8) {
        fprintf(stderr, "layout sizes: %llu code bytes, %llu groups\n",
                (unsigned long long)kvq_kivi_code_bytes(&sh), (unsigned long long)kvq_kivi_groups(&sh));
        return 1;
    }
    st = kvq_kivi_quantize(codes, scale, zero, &fl, x, &sh, &kvq_policy_default);
    if (st != KVQ_OK) {
        fprintf(stderr, "kvq_kivi_quantize: %s (%s)\n", kvq_status_name(st), kvq_status_str(st));
        return 1;
    }
    st = kvq_kivi_dequantize(y, &df, codes, scale, zero, &sh, &kvq_policy_default);
    if (st != KVQ_OK || fl != 0u) {
        fprintf(stderr, "dequantize %s, flags 0x%x\n", kvq_status_name(st), fl);
        return 1;
    }
    for (uint64_t g = 0; g < kvq_kivi_groups(&sh); g++)
        for (uint32_t i = 0; i < sh.group; i++) {
            uint64_t e = kvq_kivi_elem_index(&sh, g, i);
            uint32_t c = kvq_unpack_code(codes + kvq_kivi_group_code_offset(&sh, g), i, sh.bits);
            if (!(fabsf(y[e] - x[e]) <= scale[g]) || !kvq_exact_kivi_deq_within(y[e], c, scale[g], zero[g], NULL, NULL)) {
                fprintf(stderr, "element %llu: x %a y %a\n", (unsigned long long)e, x[e], y[e]);
                return 1;
            }
        }
    sh.bits = 3;
    st = kvq_kivi_quantize(codes, scale, zero, &fl, x, &sh, &kvq_policy_default);
    if (st != KVQ_E_PARAM) {
        fprintf(stderr, "bits=3: %s, expected KVQ_E_PARAM\n", kvq_status_name(st));
        return 1;
    }
    printf("kvq_kivi_quantize: %s; bits=3: %s; subject ABI %u\n", kvq_status_name(KVQ_OK),
           kvq_status_name(st), (unsigned)KVQ_SUBJECT_ABI_V3);
    return 0;
}
EOF
CC=${CC:-cc}
expect 0 "a C program builds against the installed kvq (pkg-config)" -- \
  $CC -std=c11 -Wall -Wextra -Werror -o "$T/use_kvq" "$T/use_kvq.c" $flags
expect 0 "it runs: kvq_kivi_quantize returns KVQ_OK" -- "$T/use_kvq"
grep_out '^kvq_kivi_quantize: KVQ_OK; bits=3: KVQ_E_PARAM' "its output names the statuses"

expect 0 "installed kvq runs" -- "$P/bin/kvq" version
grep_out "^kvq $want " "installed kvq is this version"
expect 0 "installed kvq generates vectors" -- "$P/bin/kvq" gen --family kivi --level smoke --shard 0/8 -o "$T/s.vec"
expect 0 "installed kvqio reads them" -- env PYTHONPATH="$P/share/kvq/python" python3 -B -c \
  "import kvqio, sys; vf = kvqio.read_vectors(sys.argv[1]); assert kvqio.__file__.startswith(sys.argv[2]); print(len(vf), 'cases')" \
  "$T/s.vec" "$P/share/kvq/python"

expect 0 "installed PyTorch example answers --help (finds the installed kvqio, imports no torch)" -- \
  env -u PYTHONPATH python3 -B "$P/share/kvq/examples/torch_kivi.py" --help
grep_out "--vectors" "its usage names --vectors"
expect 0 "installed attention example answers --help (finds the installed kvqio, imports no torch)" -- \
  env -u PYTHONPATH python3 -B "$P/share/kvq/examples/torch_sage.py" --help
grep_out "sageattn" "its usage names the sageattn kernel"

# the man page: rendered by whichever of man and groff exist, without a warning
page=$P/share/man/man1/kvq.1
rendered=0
if man --version >/dev/null 2>&1; then
  MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings -E UTF-8 -l "$page" >"$T/man.txt" 2>"$T/man.err"; rc=$?
  if [ $rc = 0 ] && [ ! -s "$T/man.err" ] && grep -q '^NAME' "$T/man.txt" && grep -q 'kvq verify' "$T/man.txt"; then
    ok "man -l renders kvq.1 without warnings ($(wc -l < "$T/man.txt") lines)"
  else bad "man -l kvq.1: exit $rc, $(head -c 600 "$T/man.err")"; fi
  rendered=1
fi
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$page" 2>"$T/groff.err"; rc=$?
  if [ $rc = 0 ] && [ ! -s "$T/groff.err" ]; then ok "groff -man -ww: no warnings"
  else bad "groff -man -ww kvq.1: exit $rc, $(head -c 600 "$T/groff.err")"; fi
  rendered=1
fi
[ $rendered = 1 ] || bad "neither man nor groff is installed: kvq.1 not rendered"

# the page documents every subcommand and option that `kvq --help` lists
"$P/bin/kvq" --help > "$T/help.txt" 2>&1
sed 's/\\-/-/g' "$page" > "$T/page.txt"
subs=$(sed -n 's/^  kvq \([a-z][a-z-]*\).*/\1/p' "$T/help.txt" | sort -u)
missing=""
for c in $subs; do grep -qx "\.B $c" "$T/page.txt" || missing="$missing $c"; done
[ -n "$subs" ] && [ -z "$missing" ] && ok "kvq.1 has a COMMANDS entry for each subcommand: $(echo $subs)" \
  || bad "kvq.1 lacks subcommands:${missing:- (kvq --help lists none)}"
missing=""
for o in $(grep -oE -- '--[a-z][a-z-]*' "$T/help.txt" | sort -u); do grep -qF -- "$o" "$T/page.txt" || missing="$missing $o"; done
[ -z "$missing" ] && ok "kvq.1 names every option of kvq --help" || bad "kvq.1 lacks options:$missing"
finish install.sh
