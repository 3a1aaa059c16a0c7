#!/usr/bin/env bash
# proofs/gappa/run.sh -- the float facts of proofs/gappa/*.g, proved by Gappa.
#
#   bash proofs/gappa/run.sh      (make proofs-gappa; make proofs runs it too)
#
# 1. Runs Gappa on every script proofs/gappa/*.g and prints a table
#    script -> statement -> result (PROVED / FAILED / ERROR / TIMEOUT); writes it, with the Gappa
#    version, to proofs/gappa/results.txt.
# 2. Runs the mutants listed below (a script with one hypothesis widened or one
#    model step changed, each a real bug): every one must FAIL, or the scripts
#    could not fail either.
# 3. Checks proofs/accepted.txt: every goal accepted under a float entry
#    ([TR-GOAL-*FLOAT*]) names in its third column the scripts that prove it
#    (`gappa:a.g,b.g`); each must exist, be proved, and list the goal under its
#    `# Goals:`; and every goal a script lists under `# Goals:` is such an
#    accepted goal naming it (a goal WP now proves is dropped from the list, so
#    no script claims a goal it is not needed for).  A script must cite on its first line only IDs that spec/ or
#    proofs/TRUSTED.md define, and carry `# Models:`, `# Goals:` or the spec bound
#    it proves, and `# Statement:`.
# Exit status: 0 everything proved and every check passed; 1 a script unproved,
# a mutant proved, or a check failed; 2 Gappa missing or a script malformed.
set -u
cd "$(dirname "$0")/../.." || exit 2
DIR=proofs/gappa
OUT=$DIR/results.txt
GAPPA=${GAPPA:-gappa}
LIMIT=${KVQ_GAPPA_TIMEOUT:-60}   # seconds per script; every one takes well under 1 s

command -v "$GAPPA" >/dev/null || { echo "proofs/gappa/run.sh: gappa not found (ci/setup.sh installs it)"; exit 2; }
command -v python3 >/dev/null || { echo "proofs/gappa/run.sh: python3 not found"; exit 2; }
VERSION=$("$GAPPA" --version 2>&1 | head -1)

# Mutants: SCRIPT|sed expression|the bug it plants (no `|` inside the fields).  Each
# must make Gappa fail, and each mutated statement is false (a counterexample exists), so
# the failure is not a limit of Gappa's heuristics.
MUTANTS=(
  'kivi_round_f16_top.g|s/a in \[32768, 65519.99609375\]/a in [32768, 65520]/|the overflow test `a >= 65520` as `a > 65520`: the tie 65520 rounds to 65536'
  'kivi_round_f16_normal.g|s/p in \[0x1p-24, 0x1p4\]/p in [0x1p-24, 0x1p5]/|the top binade e = 16 without the overflow test: r up to 65536'
  'sage_qk_code_quotient.g|s/x \/ s in \[-128, 128\]/x \/ s in [-129, 129]/|a scale one code short: |x| <= (cmax + 2) s'
  'vidkv_round_half_even_range.g|s/f in \[0, 1\]/f in [0, 1.001]/|a fraction above 1'
  'cert_value_deq.g|s/k in \[0, 15\]/k in [0, 16]/|a 5-bit code in the 4-bit value format'
  'cert_up_gamma_arg.g|s/za in \[0, 0x1p127\]/za in [0, 0x1.fffffep127]/|any finite offset: the counterexample z = FLT_MAX'
  'cert_ru_norm24_lo.g|s/lo in \[1, /lo in [0, /|N = 0 reaching the candidate (the early return dropped)'
  'kivi_dequant_bound.g|s/^y = rnd(p + z);/y = float<11, -24, ne>(p + z);/|the sum rounded to binary16 (a subject keeping half-precision metadata arithmetic)'
  'cert_key_bound.g|s/\[0x1p-126, 256\]/[0x1p-130, 256]/|a subnormal quotient taken as relative-error only'
  'sage_qk_no_clamp.g|s/m \/ cm in \[0x1p-126, /m \/ cm in [0x1p-130, /|a subnormal scale kept (the zero-range rule dropped)'
  'cert_earith_up.g|s/rs = ru(srange + ru(4 \* epss));/rs = ru(srange + ru(2 * epss));/|R_s from the computed scores with 2 eps_s, not 4'
  'cert_ekey_up.g|s/^om = ru(1 - td);/om = rd(1 - td);/|1 - t_dn rounded down (dn in place of up): an upper bound of 1 - t rounded the wrong way'
  'cert_eval_up.g|s/rhp = ru(e2d \* ru(eu \/ rd(sl + tl)));/rhp = ru(e2d * ru(eu \/ ru(sl + tl)));/|the paper rho with its denominator rounded up'
  'cert_tail_up.g|s/^q = rd(rd(1 - a)/q = rd(ru(1 - a)/|tail_up with 1 - a rounded up'
)

W=$(mktemp -d "${TMPDIR:-/tmp}/kvq-gappa.XXXXXX")
trap 'rm -rf "$W"' EXIT

# run_one FILE: prints PROVED, FAILED (Gappa ran and left a property unproved), ERROR
# (Gappa did not run the script: syntax, ...) or TIMEOUT; Gappa's messages in $W/<name>.err
run_one() {
  local f=$1 rc err
  err=$W/$(basename "$f").err
  timeout "$LIMIT" "$GAPPA" "$f" > "$W/$(basename "$f").out" 2> "$err"
  rc=$?
  case $rc in
    0) echo PROVED;;
    124) echo TIMEOUT;;
    *) if grep -q 'some properties were not satisfied' "$err"; then echo FAILED; else echo ERROR; fi;;
  esac
}

shopt -s nullglob
scripts=("$DIR"/*.g)
[ ${#scripts[@]} -gt 0 ] || { echo "proofs/gappa/run.sh: no script under $DIR"; exit 2; }
: > "$W/results"
for f in "${scripts[@]}"; do
  printf '%s\t%s\n' "$(basename "$f")" "$(run_one "$f")" >> "$W/results"
done
: > "$W/mutants"
for m in "${MUTANTS[@]}"; do
  IFS='|' read -r s expr why <<< "$m"
  [ -f "$DIR/$s" ] || { echo "proofs/gappa/run.sh: mutant of $s: no such script"; exit 2; }
  sed "$expr" "$DIR/$s" > "$W/mut_$s" || { echo "proofs/gappa/run.sh: the mutant of $s: sed '$expr' fails"; exit 2; }
  if cmp -s "$DIR/$s" "$W/mut_$s"; then
    echo "proofs/gappa/run.sh: the mutant of $s ($expr) changes nothing"; exit 2
  fi
  printf '%s\t%s\t%s\n' "$s" "$(run_one "$W/mut_$s")" "$why" >> "$W/mutants"
done

python3 - "$DIR" "$OUT" "$W" "$VERSION" "${scripts[@]}" <<'EOF'
import os, re, sys
d, out, w, version = sys.argv[1:5]
scripts = [os.path.basename(s) for s in sys.argv[5:]]
idre = re.compile(r'\[([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+)(?:\.\.[0-9]+)?\]')
known = set()
for root, _, files in os.walk('spec'):
    for fn in files:
        if fn.endswith('.md'):
            known |= set(idre.findall(open(os.path.join(root, fn)).read()))
for line in open('proofs/TRUSTED.md'):
    m = re.match(r'^(?:###|\|) \[(TR-[A-Z0-9-]+)\]', line)
    if m:
        known.add(m.group(1))
result = dict(l.rstrip('\n').split('\t') for l in open(f'{w}/results'))
errors, malformed = [], []

def field(lines, key):
    """The text of `# key: ...` and its continuation lines (`#   ...`)."""
    for i, l in enumerate(lines):
        if l.startswith(f'# {key}:'):
            text = [l[len(f'# {key}:'):].strip()]
            for c in lines[i + 1:]:
                if c.startswith('#   '):
                    text.append(c[1:].strip())
                else:
                    break
            return ' '.join(text)
    return None

meta = {}
for s in scripts:
    lines = open(os.path.join(d, s)).read().splitlines()
    ids = idre.findall(lines[0]) if lines else []
    bad = [i for i in ids if i not in known]
    if not ids:
        malformed.append(f'{d}/{s}:1: the first line cites no requirement ID')
    if bad:
        malformed.append(f'{d}/{s}:1: cites {", ".join(bad)}, which neither spec/ nor proofs/TRUSTED.md defines')
    stmt, goals, model = field(lines, 'Statement'), field(lines, 'Goals'), field(lines, 'Models')
    if stmt is None or model is None:
        malformed.append(f'{d}/{s}: no `# Statement:` or `# Models:` line')
    meta[s] = (stmt or '', (goals or '').split(), lines[0].lstrip('# ').strip() if lines else '')

# accepted.txt: every goal of a float entry names scripts that prove it
named = {}   # script -> the accepted goals that name it
for n, line in enumerate(open('proofs/accepted.txt'), 1):
    body = line.split('#', 1)[0].split()
    if len(body) >= 3 and body[2].startswith('gappa:'):
        for s in body[2][len('gappa:'):].split(','):
            named.setdefault(s, set()).add(body[0])
    if len(body) < 2 or 'FLOAT' not in body[1]:
        continue
    goal, tr = body[0], body[1]
    where = f'proofs/accepted.txt:{n}'
    if len(body) < 3 or not body[2].startswith('gappa:'):
        errors.append(f'{where}: {goal} ({tr}) names no Gappa script (third column gappa:SCRIPT.g[,SCRIPT.g])')
        continue
    for s in body[2][len('gappa:'):].split(','):
        if s not in meta:
            errors.append(f'{where}: {goal} names {s}, which is not a script of {d}/')
        elif result.get(s) != 'PROVED':
            errors.append(f'{where}: {goal} names {s}, which Gappa does not prove ({result.get(s)})')
        elif goal not in meta[s][1]:
            errors.append(f'{where}: {goal} names {s}, whose `# Goals:` does not list it')

# and the other way: a goal a script's `# Goals:` lists is an accepted goal that
# names the script (a goal WP proves, or one accepted without this script, is stale)
for s in scripts:
    for goal in meta[s][1]:
        if goal not in named.get(s, ()):
            errors.append(f'{d}/{s}: `# Goals:` lists {goal}, which proofs/accepted.txt does not '
                          f'accept naming gappa:{s} (proved by WP now? drop it from `# Goals:`)')

rows = [(s, meta[s][0], result[s]) for s in scripts]
mut = [l.rstrip('\n').split('\t') for l in open(f'{w}/mutants')]
lines = [f'# kvq Gappa results: {version}, {len(scripts)} scripts, {len(mut)} mutants',
         '# script: statement => result']
for s, stmt, r in rows:
    lines.append(f'{s}: {stmt} => {r}')
lines.append('# mutants, each must FAIL: script: the bug it plants => result')
for s, r, why in mut:
    lines.append(f'{s}: {why} => {r}')
proved = sum(r == 'PROVED' for _, _, r in rows)
killed = sum(r == 'FAILED' for _, r, _ in mut)
lines.append(f'# {proved}/{len(rows)} scripts proved, {killed}/{len(mut)} mutants fail')
text = '\n'.join(lines) + '\n'
print(text, end='')
for s, _, r in rows:
    if r != 'PROVED':
        errors.append(f'{d}/{s}: {r} -- Gappa says: ' +
                      ' '.join(open(f'{w}/{s}.err').read().split())[:400])
for s, r, why in mut:
    if r != 'FAILED':
        errors.append(f'{d}/{s}: the mutant "{why}" gives {r}, not FAILED (a property Gappa cannot prove)')
for e in malformed:
    print('proofs/gappa/run.sh: ' + e)
for e in errors:
    print('proofs/gappa/run.sh: ' + e)
if malformed:
    sys.exit(2)
if errors:
    sys.exit(1)
tmp = out + '.tmp'
open(tmp, 'w').write(text)
os.replace(tmp, out)
EOF
