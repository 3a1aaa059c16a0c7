#!/usr/bin/env bash
# tests/shards.sh BUILD -- a verification run in shards and merged is the
# single run, byte for byte: by hand, by the Slurm job-array recipe (its tasks
# run here one after another, with the variables Slurm sets; tests/slurm.sh
# runs it on a real Slurm), and by the GNU parallel recipe; merge refuses what is not the shards of one run; long
# work reports progress when asked.
# SPEC: [VER-MERGE-01] [VER-CLI-07] [VER-REP-04]
set -u
B=$(cd "${1:-build}" && pwd)
export KVQ=$B/rel/kvq
HERE=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$HERE/tests/lib.sh"
cd "$T" || exit 2

echo "== tests/shards.sh"
"$KVQ" gen --family cert --level smoke --quiet -o c.vec 2>/dev/null
"$KVQ" gen --family kivi --level smoke --quiet -o k.vec 2>/dev/null

for fam in c k; do
  expect 0 "single run ($fam)" -- "$KVQ" verify --vectors $fam.vec --subject ref-fast --json $fam-single.json --junit $fam-single.xml
  for i in 0 1 2; do
    "$KVQ" verify --vectors $fam.vec --subject ref-fast --shard $i/3 --json $fam-part$i.json >/dev/null 2>&1
  done
  expect 0 "merge of 3 shards ($fam)" -- "$KVQ" merge $fam-part2.json $fam-part0.json $fam-part1.json --json $fam-merged.json --junit $fam-merged.xml --html $fam-merged.html
  cmp -s $fam-single.json $fam-merged.json && ok "merged JSON is the single run's, byte for byte ($fam)" || { bad "merged JSON differs ($fam)"; diff $fam-single.json $fam-merged.json | head -5; }
  cmp -s $fam-single.xml $fam-merged.xml && ok "merged JUnit is the single run's, byte for byte ($fam)" || { bad "merged JUnit differs ($fam)"; diff $fam-single.xml $fam-merged.xml | head -5; }
  grep -q '<svg' $fam-merged.html && ok "merged HTML report has its plots ($fam)" || bad "merged HTML without plots ($fam)"
done
grep -q '"shard": "1/3"' c-part1.json && ok "a shard's report names its shard" || bad "shard missing from the shard's report"

# a failing subject: the merged verdict is the single run's, exit status too
"$KVQ" verify --vectors c.vec --subject "$B/subjects/cert_midpoint.so" --json mid-single.json >/dev/null 2>&1
for i in 0 1; do "$KVQ" verify --vectors c.vec --subject "$B/subjects/cert_midpoint.so" --shard $i/2 --json mid-$i.json >/dev/null 2>&1; done
expect 1 "merge of a failing run exits 1" -- "$KVQ" merge mid-0.json mid-1.json --json mid-merged.json
cmp -s mid-single.json mid-merged.json && ok "failing run merged byte for byte" || bad "failing run merge differs"

# the Slurm job-array recipe: each task with the variables Slurm sets for
# --array=0-3, then the merge job (make test-slurm runs it on a real Slurm)
for i in 0 1 2 3; do
  SLURM_ARRAY_JOB_ID=7 SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=3 SLURM_ARRAY_TASK_ID=$i \
    bash "$HERE/ci/recipes/slurm-verify.sbatch" c.vec ref-fast slurm >/dev/null 2>&1 || bad "slurm task $i failed"
done
expect 0 "the Slurm merge job" -- bash "$HERE/ci/recipes/slurm-merge.sbatch" slurm
grep_out "kvq merge of 4 shards in slurm: PASS \(passed=$(grep -c '^case ' c.vec) failed=0 skipped=0\)" "the merge job's verdict line"
cmp -s c-single.json slurm/report.json && cmp -s c-single.xml slurm/report.xml && ok "Slurm recipe reproduces the single run" \
  || bad "Slurm recipe's report differs"
expect 2 "the Slurm script outside an array refuses" -- bash "$HERE/ci/recipes/slurm-verify.sbatch" c.vec ref-fast x
expect 2 "an array not 0..N-1 (--array=1-4) is refused" -- env SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_TASK_MIN=1 \
  SLURM_ARRAY_TASK_MAX=4 SLURM_ARRAY_TASK_ID=1 bash "$HERE/ci/recipes/slurm-verify.sbatch" c.vec ref-fast x
grep_out "task IDs are 1..4 \(4 tasks\), not 0..3" "the refusal says why"
[ ! -e x ] && ok "nothing written by the refused task" || bad "the refused task wrote x/"
rm slurm/shard-2.json
expect 0 "a rerun of shard 2 alone (KVQ_SHARDS=4, --array=2)" -- env KVQ_SHARDS=4 SLURM_ARRAY_TASK_COUNT=1 SLURM_ARRAY_TASK_MIN=2 \
  SLURM_ARRAY_TASK_MAX=2 SLURM_ARRAY_TASK_ID=2 bash "$HERE/ci/recipes/slurm-verify.sbatch" c.vec ref-fast slurm
grep -q '"shard": "2/4"' slurm/shard-2.json && ok "the rerun wrote shard 2/4" || bad "the rerun did not write shard 2/4"
expect 2 "a task whose shard cannot be run exits 2" -- env SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_TASK_MIN=0 \
  SLURM_ARRAY_TASK_MAX=3 SLURM_ARRAY_TASK_ID=0 bash "$HERE/ci/recipes/slurm-verify.sbatch" c.vec ./no-such-subject.so y
expect 2 "the merge job with no shards" -- bash "$HERE/ci/recipes/slurm-merge.sbatch" y-empty
grep_out "no shard reports in y-empty" "the merge job says why"

# the GNU parallel recipe
if command -v parallel >/dev/null 2>&1; then
  expect 0 "GNU parallel recipe" -- bash "$HERE/ci/recipes/parallel-verify.sh" c.vec ref-fast par 3
  cmp -s c-single.json par/report.json && cmp -s c-single.xml par/report.xml && ok "parallel recipe reproduces the single run" \
    || bad "parallel recipe's report differs"
else
  bad "GNU parallel is not installed (ci/setup.sh installs it)"
fi

# merge refuses what is not the shards of one run
expect 2 "a missing shard" -- "$KVQ" merge c-part0.json c-part1.json --json x.json
grep_out "shard 0/3, but 2 reports were given" "missing shard named"
expect 2 "a shard given twice" -- "$KVQ" merge c-part0.json c-part0.json c-part1.json --json x.json
grep_out "shard 0/3 is also" "duplicate shard named"
sed 's/"subject": "ref-fast"/"subject": "other"/' c-part1.json > other1.json
expect 2 "shards of different subjects" -- "$KVQ" merge c-part0.json other1.json c-part2.json --json x.json
grep_out '"subject" differs' "different subject named"
expect 2 "a single run's report is no shard" -- "$KVQ" merge c-single.json --json x.json
grep_out 'no "shard"' "non-shard named"
head -c 300 c-part0.json > cut.json
expect 2 "a truncated report" -- "$KVQ" merge cut.json c-part1.json c-part2.json --json x.json
grep_out 'cut.json: byte [0-9]+: ' "truncated report named with its byte offset"
[ ! -e x.json ] && ok "nothing written by a refused merge" || bad "a refused merge wrote x.json"

# progress: asked for, one line a tenth on a log; never on stdout
nc=$(grep -c '^case ' c.vec); nk=$(grep -c '^case ' k.vec)
expect 0 "verify --progress on a log" -- "$KVQ" verify --vectors c.vec --subject ref-fast --progress
if grep -Eq "^kvq verify: [0-9]+/$nc cases, [0-9.]+/s" "$T/err"; then ok "progress lines on stderr"; else bad "no progress line"; fi
grep -q 'cases, ' "$T/out" && bad "progress on stdout" || ok "stdout has no progress"
expect 0 "verify without --progress outside a terminal is quiet" -- "$KVQ" verify --vectors c.vec --subject ref-fast
grep -q 'cases, ' "$T/err" && bad "progress printed unasked" || ok "quiet in logs unless asked"
expect 0 "gen --progress" -- "$KVQ" gen --family kivi --level smoke --progress -o g.vec
grep_out "^kvq gen: $nk/$nk cases" "gen reports its progress"

finish shards.sh
