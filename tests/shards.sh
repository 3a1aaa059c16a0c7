#!/usr/bin/env bash
# tests/shards.sh BUILD -- a verification run in shards and merged is the
# single run, byte for byte: by hand, by the Slurm job-array recipe (its tasks
# run here one after another, with the variables Slurm sets; tests/slurm.sh
# runs it on a real Slurm), and by the GNU parallel recipe; merge refuses what is not the shards of one run; long
# work reports progress when asked.
# SPEC: [VER-MERGE-01] [VER-MERGE-02] [VER-CLI-07] [VER-REP-04]
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
nc=$(grep -c '^case ' c.vec); nk=$(grep -c '^case ' k.vec)

for fam in c k; do
  expect 0 "single run ($fam)" -- "$KVQ" verify --vectors $fam.vec --subject ref-fast --json $fam-single.json --junit $fam-single.xml
  for i in 0 1 2; do
    "$KVQ" verify --vectors $fam.vec --subject ref-fast --shard $i/3 --json $fam-part$i.json >/dev/null 2>&1
  done
  expect 0 "merge of 3 shards ($fam)" -- "$KVQ" merge $fam-part2.json $fam-part0.json $fam-part1.json --json $fam-merged.json --junit $fam-merged.xml --html $fam-merged.html
  cmp -s $fam-single.json $fam-merged.json && ok "merged JSON is the single run's, byte for byte ($fam)" || { bad "merged JSON differs ($fam)"; diff $fam-single.json $fam-merged.json | head -5; }
  cmp -s $fam-single.xml $fam-merged.xml && ok "merged JUnit is the single run's, byte for byte ($fam)" || { bad "merged JUnit differs ($fam)"; diff $fam-single.xml $fam-merged.xml | head -5; }
  grep -q '<svg' $fam-merged.html && ok "merged HTML report has its plots ($fam)" || bad "merged HTML without plots ($fam)"
  expect 0 "the merged report is one of the vectors and the subject ($fam, kvq report-check)" -- \
    "$KVQ" report-check $fam-merged.json --vectors $fam.vec --subject ref-fast
done
# results mode: one results file answers the whole vector file; each shard
# judges its own cases' results and sets the others' aside [VER-MERGE-01]
"$KVQ" run --subject ref-fast --vectors k.vec -o k.res --quiet 2>/dev/null
"$KVQ" verify --vectors k.vec --results k.res --json k-rsingle.json >/dev/null 2>&1
for i in 0 1 2; do
  expect 0 "results file verified as shard $i/3" -- "$KVQ" verify --vectors k.vec --results k.res --shard $i/3 --json k-rpart$i.json
done
expect 0 "merge of the results-mode shards" -- "$KVQ" merge k-rpart0.json k-rpart1.json k-rpart2.json --json k-rmerged.json
cmp -s k-rsingle.json k-rmerged.json && ok "results-mode shards merge to the single run, byte for byte" \
  || { bad "results-mode merge differs"; diff k-rsingle.json k-rmerged.json | head -5; }
{ cat k.res; printf 'result id=kivi-smoke-99999-nosuch status=0\n'; } | grep -v '^end' > k-extra.res
grep '^end' k.res >> k-extra.res
expect 2 "a result for a case the vectors do not hold is refused in a shard too" -- \
  "$KVQ" verify --vectors k.vec --results k-extra.res --shard 1/3
grep_out "result for unknown case 'kivi-smoke-99999-nosuch'" "the refusal names the case"

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
grep_out 'other1.json: "subject" is "other", but c-part0.json' "different subject named"
expect 2 "a single run's report is no shard" -- "$KVQ" merge c-single.json --json x.json
grep_out 'no "shard"' "non-shard named"
head -c 300 c-part0.json > cut.json
expect 2 "a truncated report" -- "$KVQ" merge cut.json c-part1.json c-part2.json --json x.json
grep_out 'cut.json: byte [0-9]+: ' "truncated report named with its byte offset"
[ ! -e x.json ] && ok "nothing written by a refused merge" || bad "a refused merge wrote x.json"

# merge recounts from the cases and refuses shards that are not one run's
# [VER-MERGE-02]: each a report a hand or a script could edit
json_num() { sed -n "s/^  \"$2\": \([0-9]*\),\$/\1/p" "$1"; }
# every judged case counted as passed, the cases left as they are
allpass() {
  local n=$(( $(json_num "$1" passed) + $(json_num "$1" failed) + $(json_num "$1" skipped) ))
  sed -e "s/^  \"passed\": [0-9]*,/  \"passed\": $n,/" -e 's/^  "failed": [0-9]*,/  "failed": 0,/' \
      -e 's/^  "skipped": [0-9]*,/  "skipped": 0,/' "$1" > "$2"
}
allpass mid-0.json forged-0.json; allpass mid-1.json forged-1.json
expect 2 "shards of a failing run with edited counts are refused" -- "$KVQ" merge forged-0.json forged-1.json --json x.json
grep_out 'forged-0.json: its counts say [0-9]+ passed, 0 failed, 0 skipped, but its cases hold [0-9]+ passed, [1-9][0-9]* failed' \
  "edited counts named with the recount"
# a case deleted (the first of shard 1's), counts left: the counts disagree
first=$(grep -n '^    {"id": ' c-part1.json | head -1 | cut -d: -f1)
sed "${first}d" c-part1.json > del1.json
expect 2 "a shard with a deleted case is refused" -- "$KVQ" merge c-part0.json del1.json c-part2.json --json x.json
grep_out "del1.json: its counts say" "deleted case named (counts)"
# ... and the counts edited to agree: the case is missing from the shard
sed "s/^  \"passed\": \([0-9]*\),/  \"passed\": $(( $(json_num c-part1.json passed) - 1 )),/" del1.json > del1c.json
expect 2 "a shard with a deleted case and agreeing counts is refused" -- "$KVQ" merge c-part0.json del1c.json c-part2.json --json x.json
grep_out "del1c.json: the shard of a vector file of $nc cases holds [0-9]+ cases, but the report lists [0-9]+ judged, 0 deselected and 0 unclaimed: cases are missing" \
  "missing case named with the shard's size"
# a case of shard 0 in place of one of shard 1 (counts agree, sizes agree)
sed -n "$(grep -n '^    {"id": ' c-part0.json | head -1 | cut -d: -f1)p" c-part0.json > dupline
sed -e "${first}r dupline" -e "${first}d" c-part1.json > dup1.json
expect 2 "a case listed by two shards is refused" -- "$KVQ" merge c-part0.json dup1.json c-part2.json --json x.json
grep_out "case $(sed 's/^    {"id": "\([^"]*\)".*/\1/' dupline) is listed twice" "duplicated case named"
# shards judged at different levels
"$KVQ" verify --vectors c.vec --subject ref-fast --shard 0/2 --level exact --json lv-0.json >/dev/null 2>&1
"$KVQ" verify --vectors c.vec --subject ref-fast --shard 1/2 --level bounded --json lv-1.json >/dev/null 2>&1
expect 2 "shards judged at different levels are refused" -- "$KVQ" merge lv-0.json lv-1.json --json x.json
grep_out 'lv-1.json: "level" is "bounded", but lv-0.json.s is "exact"' "different levels named"
"$KVQ" verify --vectors c.vec --subject ref-fast --shard 1/2 --level exact --json lv-1e.json >/dev/null 2>&1
"$KVQ" verify --vectors c.vec --subject ref-fast --level exact --json lv-single.json >/dev/null 2>&1
expect 0 "shards judged at one level merge" -- "$KVQ" merge lv-0.json lv-1e.json --json lv-merged.json
cmp -s lv-single.json lv-merged.json && ok "merged --level exact run is the single run's" || bad "merged --level exact run differs"
# shards of different claims
"$KVQ" verify --vectors c.vec --subject ref-fast --shard 1/2 --ops cert-keys,cert-values --json op-1.json >/dev/null 2>&1
"$KVQ" verify --vectors c.vec --subject ref-fast --shard 0/2 --json op-0.json >/dev/null 2>&1
expect 2 "shards of different claims are refused" -- "$KVQ" merge op-0.json op-1.json --json x.json
grep_out 'op-1.json: "claim" is "cert-keys,cert-values", but op-0.json.s is "all"' "different claims named"
# shards of another vector file at the same path: refused by digest
mkdir -p other && "$KVQ" gen --family cert --level smoke --seed 7 --quiet -o other/c.vec 2>/dev/null
(cd other && "$KVQ" verify --vectors c.vec --subject ref-fast --shard 1/3 --json ../ov-1.json >/dev/null 2>&1)
expect 2 "a shard of another vector file (same path) is refused" -- "$KVQ" merge c-part0.json ov-1.json c-part2.json --json x.json
grep_out 'ov-1.json: "vectors_sha256" is "[0-9a-f]{64}", but c-part0.json.s is' "other vectors named by digest"
# ... and a shard of the same file at another path merges
cp c.vec copy.vec
"$KVQ" verify --vectors copy.vec --subject ref-fast --shard 1/3 --json cp-1.json >/dev/null 2>&1
expect 0 "a shard of the same vectors at another path merges" -- "$KVQ" merge c-part0.json cp-1.json c-part2.json --json cp-merged.json
cmp -s c-single.json cp-merged.json && ok "the merged report keeps shard 0's path" || bad "merge of a copied file's shard differs"
# another subject of the same name: refused by the SHA-256 of its file
cp "$B/subjects/cert_midpoint.so" mid-a.so && cp "$B/subjects/cert_midpoint.so" mid-b.so && printf 'x' >> mid-b.so
"$KVQ" verify --vectors c.vec --subject ./mid-a.so --shard 0/2 --json sa-0.json >/dev/null 2>&1
"$KVQ" verify --vectors c.vec --subject ./mid-b.so --shard 1/2 --json sa-1.json >/dev/null 2>&1
expect 2 "shards of two builds of one subject name are refused" -- "$KVQ" merge sa-0.json sa-1.json --json x.json
grep_out 'sa-1.json: "subject_sha256" is "[0-9a-f]{64}", but sa-0.json.s is' "other subject named by SHA-256"
# a report of an older format
sed 's/^  "kvq_report": 2,/  "kvq_report": 1,/' c-part1.json > old1.json
expect 2 "a format-1 report is refused" -- "$KVQ" merge c-part0.json old1.json c-part2.json --json x.json
grep_out 'old1.json: report format 1 records nothing of what it judged' "format 1 named"
[ ! -e x.json ] && ok "nothing written by the refused merges" || bad "a refused merge wrote x.json"

# progress: asked for, one line a tenth on a log; never on stdout
expect 0 "verify --progress on a log" -- "$KVQ" verify --vectors c.vec --subject ref-fast --progress
if grep -Eq "^kvq verify: [0-9]+/$nc cases, [0-9.]+/s" "$T/err"; then ok "progress lines on stderr"; else bad "no progress line"; fi
grep -q 'cases, ' "$T/out" && bad "progress on stdout" || ok "stdout has no progress"
expect 0 "verify without --progress outside a terminal is quiet" -- "$KVQ" verify --vectors c.vec --subject ref-fast
grep -q 'cases, ' "$T/err" && bad "progress printed unasked" || ok "quiet in logs unless asked"
expect 0 "gen --progress" -- "$KVQ" gen --family kivi --level smoke --progress -o g.vec
grep_out "^kvq gen: $nk/$nk cases" "gen reports its progress"

finish shards.sh
