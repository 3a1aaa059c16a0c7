#!/usr/bin/env bash
# ci/recipes/parallel-verify.sh VECTORS SUBJECT OUTDIR [SHARDS] -- the same
# sharded verification on one machine with GNU parallel, then `kvq merge`
# [VER-MERGE-01].  The line that does the work:
#
#   parallel -j SHARDS "kvq verify --vectors V --subject S --shard {}/SHARDS --quiet \
#       --json OUT/shard-{}.json > OUT/shard-{}.txt; test \$? -le 1" ::: $(seq 0 $((SHARDS-1)))
#   kvq merge OUT/shard-*.json --json OUT/report.json --junit OUT/report.xml --html OUT/report.html
#
# Exit status: that of kvq merge (0 all passed, 1 a case failed or was
# skipped, 2 the run could not be made).  KVQ names the kvq binary.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 VECTORS SUBJECT OUTDIR [SHARDS]" >&2; exit 2; }
V=$1 S=$2 OUT=$3 N=${4:-$(nproc)}
KVQ=${KVQ:-kvq}
mkdir -p "$OUT"
export KVQ
parallel --halt now,fail=1 -j "$N" \
    "\"\$KVQ\" verify --vectors '$V' --subject '$S' --shard {}/$N --quiet --json '$OUT'/shard-{}.json > '$OUT'/shard-{}.txt; test \$? -le 1" \
    ::: $(seq 0 $((N - 1)))
exec "$KVQ" merge "$OUT"/shard-*.json --json "$OUT/report.json" --junit "$OUT/report.xml" --html "$OUT/report.html"
