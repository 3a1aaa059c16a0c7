#!/usr/bin/env bash
# tests/slurm.sh BUILD -- the Slurm recipe of sharded verification
# (ci/recipes/slurm-verify.sbatch and slurm-merge.sbatch) on a real Slurm:
# `make test-slurm`, not part of `make test`.
#
# It starts a single-node cluster of its own -- munged, slurmctld and slurmd of
# Debian's munge and slurm-wlm (ci/setup.sh installs them), in the foreground
# of background jobs of this script, with a generated munge key and slurm.conf,
# free ports, and state, spool and logs in one temporary folder -- and stops
# every process it started and removes that folder on any exit.  No systemd,
# no /etc/slurm, no service of the packages is used.  Needs root (slurmd runs
# the jobs as their user; CI runs as root).  Then, as a user would:
#   - a job array of 4 shards and an afterok merge job: the tasks ran as 4
#     array tasks (scontrol, their logs, their shards), the merge job ran after
#     them, and the merged JSON and JUnit reports are the single run's, byte
#     for byte;
#   - a wrong subject: the tasks succeed, the merge job's verdict is FAIL
#     (exit 1) and its reports are the single failing run's, byte for byte;
#   - a shard that cannot be run (its output is not writable): that task fails
#     with exit 2, afterok is never satisfied and Slurm cancels the merge job
#     (--kill-on-invalid-dep=yes), which writes nothing; rerunning that task
#     alone (KVQ_SHARDS) and the merge then gives the single run's report;
#   - an array whose IDs are not 0..N-1 is refused by every task.
# KVQ_SLURM_TIMEOUT (default 150) bounds, in seconds, the waits for Slurm.
# SPEC: [VER-MERGE-01]
set -u
B=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd)
export KVQ=$B/rel/kvq
RECIPE=$HERE/ci/recipes
. "$HERE/tests/lib.sh"
start=$SECONDS
DEADLINE=$((SECONDS + ${KVQ_SLURM_TIMEOUT:-150}))
T='' CONF=''
ctld_pid='' slurmd_pid='' munged_pid=''

echo "== tests/slurm.sh (the Slurm recipe on a single-node Slurm)"
exec 3>&1   # the commands run, printed from inside $(...)
say() { echo "  ..   $*"; }

# ---- cleanup: every process this script started, then its folder ----------
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
stop() {  # stop NAME PID: TERM, up to 10 s, then KILL
  [ -n "$2" ] || return 0
  if ! alive "$2"; then wait "$2" 2>/dev/null; say "$1 (pid $2) has exited"; return 0; fi
  kill -TERM "$2" 2>/dev/null
  local i
  for i in $(seq 1 100); do alive "$2" || break; sleep 0.1; done
  if alive "$2"; then kill -KILL "$2" 2>/dev/null; say "$1 (pid $2) did not stop on TERM: killed"; fi
  wait "$2" 2>/dev/null
  say "stopped $1 (pid $2)"
}
# The processes of this cluster's jobs (slurmstepd, the job scripts, kvq) carry
# SLURM_CONF=$CONF in their environment: found by it, with builtins only.
ours() {
  local p e
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] && continue
    case " $ctld_pid $munged_pid " in *" $p "*) continue ;; esac
    while IFS= read -r -d '' e; do
      [ "$e" = "SLURM_CONF=$CONF" ] && { echo "$p"; break; }
    done 2>/dev/null < "/proc/$p/environ"
  done
}
# what a process is, for the log
cmd() { local c; c=$(tr '\0' ' ' 2>/dev/null < "/proc/$1/cmdline"); echo "$1 (${c% })"; }
cleanup() {
  local rc=$? p left
  trap - EXIT INT TERM
  echo "-- cleanup"
  # jobs first, then both Slurm daemons as Slurm stops them, then by signal
  if alive "$ctld_pid"; then
    timeout 10 scancel --quiet --user=root 2>/dev/null
    timeout 10 scontrol shutdown >/dev/null 2>&1 && say "scontrol shutdown"
    for i in $(seq 1 100); do alive "$ctld_pid" || alive "$slurmd_pid" || break; sleep 0.1; done
  fi
  stop slurmctld "$ctld_pid"
  stop slurmd "$slurmd_pid"
  if [ -n "$T" ]; then
    left=$(ours)
    for p in $left; do say "ending a process of the test cluster: $(cmd "$p")"; kill -TERM "$p" 2>/dev/null; done
    [ -z "$left" ] || sleep 0.5
    for p in $left; do alive "$p" && kill -KILL "$p" 2>/dev/null; done
  fi
  stop munged "$munged_pid"
  if [ -n "$T" ]; then
    left=$(ours)
    for p in $left; do bad "a process of the test cluster still runs: $(cmd "$p")"; done
    if [ "$fail" -gt 0 ] || [ "$rc" -ne 0 ]; then
      for f in "$T"/log/*.log; do
        [ -s "$f" ] && { echo "   -- last lines of ${f##*/}"; tail -n 15 "$f" | sed 's/^/      /'; }
      done
    fi
    rm -rf "$T" && say "removed $T (keys, configuration, state, spool, logs, job outputs)"
  fi
  [ "$rc" -eq 0 ] && [ "$fail" -gt 0 ] && rc=1
  echo "slurm.sh: $pass passed, $fail failed ($((SECONDS - start)) s)"
  if [ "$rc" -eq 0 ]; then echo "test-slurm: PASS"; else echo "test-slurm: FAIL"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { bad "$*"; exit 1; }

# ---- what it needs ----------------------------------------------------------
[ -x "$KVQ" ] || die "$KVQ not built (make)"
[ "$(id -u)" -eq 0 ] || die "needs root: slurmd runs each job as its submitting user, and the test starts slurmd (CI runs as root)"
for c in munged munge unmunge slurmctld slurmd sbatch scontrol sinfo squeue; do
  command -v "$c" >/dev/null 2>&1 || die "$c not found: ci/setup.sh installs Debian's slurm-wlm and munge"
done
ok "$(slurmctld -V), $(munged --version 2>&1 | awk '{print $1; exit}')"

T=$(mktemp -d /tmp/kvq-slurm.XXXXXX) || die "mktemp failed"
chmod 755 "$T"   # munged serves its socket only from a folder all may enter
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log" "$T/work"
CONF=$T/slurm.conf
export SLURM_CONF=$CONF

# two free TCP ports on the loopback for slurmctld and slurmd
ports=$(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])' 2>/dev/null) || ports="$((20000 + RANDOM % 20000)) $((40000 + RANDOM % 20000))"
set -- $ports
host=$(hostname -s)
cat > "$CONF" <<EOF
# generated by tests/slurm.sh: one node, no cgroups, no accounting, root daemons
ClusterName=kvqtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.socket
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
NodeName=kvqnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=kvq Nodes=kvqnode Default=YES MaxTime=INFINITE State=UP
EOF
say "wrote $CONF (slurmctld port $1, slurmd port $2, node kvqnode with $(nproc) CPUs)"

# ---- the daemons ------------------------------------------------------------
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$T/munge/munge.key"
munged -F --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" --pid-file="$T/munge/munged.pid" \
  --seed-file="$T/munge/munged.seed" --log-file="$T/log/munged.log" > "$T/log/munged.log" 2>&1 &
munged_pid=$!
until munge -n -S "$T/munge/munge.socket" 2>/dev/null | unmunge -S "$T/munge/munge.socket" >/dev/null 2>&1; do
  alive "$munged_pid" || die "munged exited (its log follows)"
  [ $SECONDS -lt $DEADLINE ] || die "munged did not answer in time"
  sleep 0.2
done
ok "munged (pid $munged_pid) started with a fresh key; a credential round trip works"

slurmctld -D > "$T/log/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N kvqnode > "$T/log/slurmd.out" 2>&1 &
slurmd_pid=$!
say "started slurmctld (pid $ctld_pid) and slurmd (pid $slurmd_pid) in the foreground, as background jobs of this script"
state=
until [ "$state" = idle ]; do
  alive "$ctld_pid" || die "slurmctld exited: $(tail -n 3 "$T/log/slurmctld.out" | tr '\n' ' ')"
  alive "$slurmd_pid" || die "slurmd exited: $(tail -n 3 "$T/log/slurmd.out" | tr '\n' ' ')"
  [ $SECONDS -lt $DEADLINE ] || die "node kvqnode not idle in time (state '$state')"
  sleep 0.5
  state=$(sinfo -h -n kvqnode -o %t 2>/dev/null)
done
ok "node kvqnode registered and idle ($((SECONDS - start)) s)"

# ---- helpers over scontrol --------------------------------------------------
# field LINE NAME: the value of NAME= in one line of `scontrol -o show job`
field() { local v; v=$(grep -oE "(^| )$2=[^ ]*" <<< "$1" | head -n1); echo "${v#*=}"; }
# wait_job ID: until every record of ID (an array: every task) has ended
wait_job() {
  local out
  while :; do
    out=$(scontrol -o show job "$1" 2>/dev/null)
    [ -n "$out" ] && ! grep -qE 'JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED)' <<< "$out" && return 0
    [ $SECONDS -lt $DEADLINE ] || { bad "job $1 not ended in time: $(grep -oE 'JobState=[^ ]*|Reason=[^ ]*' <<< "$out" | sort | uniq -c | tr -s ' \n' ' ')"; return 1; }
    sleep 0.5
  done
}
# tasks ARRAYID: "TASKID STATE EXITCODE JOBID ENDTIME" per task, sorted
tasks() {
  local l
  scontrol -o show job "$1" 2>/dev/null | while IFS= read -r l; do
    echo "$(field "$l" ArrayTaskId) $(field "$l" JobState) $(field "$l" ExitCode) $(field "$l" JobId) $(field "$l" EndTime)"
  done | sort -n
}
# submit ARGS...: sbatch --parsable, printed as run; the job ID on stdout
submit() {
  echo "  \$    ${KVQ_SHARDS:+KVQ_SHARDS=$KVQ_SHARDS }sbatch $*" | sed "s|$RECIPE/|ci/recipes/|g; s|$B/|build/|g" >&3
  local id; id=$(sbatch --parsable "$@") || return 1
  echo "${id%%;*}"
}
# check_array ARRAYID N STATE/EXIT...: N task records, IDs 0..N-1, in the states given
check_array() {
  local aid=$1 n=$2; shift 2
  local got want="" i
  got=$(tasks "$aid" | awk '{print $1 " " $2 "/" $3}')
  for i in $(seq 0 $((n - 1))); do want+="$i $1"$'\n'; shift; done
  if [ "$got" = "${want%$'\n'}" ]; then ok "array $aid ran as $n tasks: $(echo $(sed 's/ /:/' <<< "$got"))"
  else bad "array $aid: tasks $(echo $got), expected $(echo $want)"; fi
}

cd "$T/work" || die "cannot enter $T/work"
"$KVQ" gen --family cert --level smoke --quiet -o c.vec 2>/dev/null || die "kvq gen failed"
n_cases=$(grep -c '^case ' c.vec)
"$KVQ" verify --vectors c.vec --subject ref-fast --quiet --json single.json --junit single.xml > /dev/null 2>&1
[ $? -eq 0 ] || die "the single run of ref-fast did not pass"
"$KVQ" verify --vectors c.vec --subject "$B/subjects/cert_midpoint.so" --quiet --json mid.json --junit mid.xml > /dev/null 2>&1
[ $? -eq 1 ] || die "the single run of cert_midpoint.so did not fail"
# counts FILE: "passed=P failed=F skipped=S" of a JSON report, as the merge job prints them
counts() { grep -Eo '^  "(passed|failed|skipped)": [0-9]+' "$1" | tr -d ' "' | tr ':' '=' | paste -sd ' '; }
say "single runs over c.vec ($n_cases cases): ref-fast $(counts single.json); cert_midpoint.so $(counts mid.json)"

# ---- 1. four shards and the merge -------------------------------------------
echo "-- a job array of 4 shards and an afterok merge job (subject ref-fast)"
aid=$(submit --array=0-3 "$RECIPE/slurm-verify.sbatch" c.vec ref-fast pass) || die "sbatch of the array failed"
mid=$(submit --dependency=afterok:$aid --kill-on-invalid-dep=yes "$RECIPE/slurm-merge.sbatch" pass) || die "sbatch of the merge failed"
say "array job $aid, merge job $mid"
wait_job "$mid" && wait_job "$aid" || die "Slurm did not finish the jobs"
check_array "$aid" 4 COMPLETED/0:0 COMPLETED/0:0 COMPLETED/0:0 COMPLETED/0:0
for i in 0 1 2 3; do
  if grep -q "task $i of array $aid: shard $i/4 on .*: kvq verify exit 0" "kvq-verify-${aid}_$i.out" 2>/dev/null &&
     grep -q "\"shard\": \"$i/4\"" "pass/shard-$i.json"; then ok "task $i: its log and its shard report (shard $i/4)"
  else bad "task $i: log or shard report missing or wrong"; sed 's/^/      /' "kvq-verify-${aid}_$i.out" 2>/dev/null | head -5; fi
done
[ "$(tasks "$aid" | awk '{print $4}' | sort -u | wc -l)" -eq 4 ] && ok "4 distinct Slurm jobs" || bad "the tasks are not 4 distinct jobs"
ml=$(scontrol -o show job "$mid")
mstart=$(field "$ml" StartTime); lastend=$(tasks "$aid" | awk '{print $5}' | sort | tail -n1)
[ "$(field "$ml" JobState) $(field "$ml" ExitCode)" = "COMPLETED 0:0" ] && ok "merge job $mid COMPLETED, exit 0" \
  || bad "merge job $mid: $(field "$ml" JobState) $(field "$ml" ExitCode), expected COMPLETED 0:0"
[[ ! "$mstart" < "$lastend" ]] && ok "the merge started ($mstart) after the last task ended ($lastend)" \
  || bad "the merge started ($mstart) before the last task ended ($lastend)"
grep -qF "kvq merge of 4 shards in pass: PASS ($(counts single.json)) (exit 0)" "kvq-merge-$mid.out" 2>/dev/null \
  && ok "merge log: $(tail -n1 "kvq-merge-$mid.out")" || { bad "merge log without its PASS line"; sed 's/^/      /' "kvq-merge-$mid.out" 2>/dev/null | head; }
cmp -s single.json pass/report.json && ok "merged JSON is the single run's, byte for byte" || bad "merged JSON differs from the single run's"
cmp -s single.xml pass/report.xml && ok "merged JUnit is the single run's, byte for byte" || bad "merged JUnit differs from the single run's"
grep -q '<svg' pass/report.html 2>/dev/null && ok "merged HTML report written" || bad "no merged HTML report"

# ---- 2. a wrong subject: the merge's verdict is FAIL -------------------------
echo "-- a wrong subject (cert_midpoint.so): 3 shards, the merge job's verdict"
aid=$(submit --array=0-2 "$RECIPE/slurm-verify.sbatch" c.vec "$B/subjects/cert_midpoint.so" mid) || die "sbatch failed"
mid=$(submit --dependency=afterok:$aid --kill-on-invalid-dep=yes "$RECIPE/slurm-merge.sbatch" mid) || die "sbatch failed"
wait_job "$mid" && wait_job "$aid" || die "Slurm did not finish the jobs"
check_array "$aid" 3 COMPLETED/0:0 COMPLETED/0:0 COMPLETED/0:0
ml=$(scontrol -o show job "$mid")
[ "$(field "$ml" JobState) $(field "$ml" ExitCode)" = "FAILED 1:0" ] && ok "merge job $mid FAILED with exit 1: the verdict FAIL" \
  || bad "merge job $mid: $(field "$ml" JobState) $(field "$ml" ExitCode), expected FAILED 1:0"
grep -qF "kvq merge of 3 shards in mid: FAIL ($(counts mid.json)) (exit 1)" "kvq-merge-$mid.out" 2>/dev/null \
  && ok "merge log: $(tail -n1 "kvq-merge-$mid.out")" || { bad "merge log without its FAIL line"; sed 's/^/      /' "kvq-merge-$mid.out" 2>/dev/null | head; }
cmp -s mid.json mid/report.json && cmp -s mid.xml mid/report.xml && ok "the failing run's reports merged byte for byte" \
  || bad "the failing run's merged reports differ from the single run's"

# ---- 3. a shard that cannot run: afterok never holds, the merge is cancelled --
echo "-- a shard that cannot be run (its report path is a folder): 4 shards"
mkdir -p broken/shard-2.json
aid=$(submit --array=0-3 "$RECIPE/slurm-verify.sbatch" c.vec ref-fast broken) || die "sbatch failed"
mid=$(submit --dependency=afterok:$aid --kill-on-invalid-dep=yes "$RECIPE/slurm-merge.sbatch" broken) || die "sbatch failed"
wait_job "$mid" && wait_job "$aid" || die "Slurm did not finish the jobs"
check_array "$aid" 4 COMPLETED/0:0 COMPLETED/0:0 FAILED/2:0 COMPLETED/0:0
grep -q 'shard-2.json: cannot write' "kvq-verify-${aid}_2.out" 2>/dev/null && ok "task 2's log names the cause: $(grep -m1 'cannot write' "kvq-verify-${aid}_2.out")" \
  || { bad "task 2's log does not name the cause"; sed 's/^/      /' "kvq-verify-${aid}_2.out" 2>/dev/null | head -5; }
ml=$(scontrol -o show job "$mid")
[ "$(field "$ml" JobState) $(field "$ml" Reason)" = "CANCELLED DependencyNeverSatisfied" ] \
  && ok "merge job $mid CANCELLED, reason DependencyNeverSatisfied (afterok:$aid failed)" \
  || bad "merge job $mid: $(field "$ml" JobState) $(field "$ml" Reason), expected CANCELLED DependencyNeverSatisfied"
[ ! -e broken/report.json ] && [ ! -e "kvq-merge-$mid.out" ] && ok "the merge never ran: no report written" || bad "a report or merge log was written"
say "rerun of the failed task alone, then the merge"
rmdir broken/shard-2.json
aid=$(KVQ_SHARDS=4 submit --array=2 "$RECIPE/slurm-verify.sbatch" c.vec ref-fast broken) || die "sbatch failed"
mid=$(submit --dependency=afterok:$aid --kill-on-invalid-dep=yes "$RECIPE/slurm-merge.sbatch" broken) || die "sbatch failed"
wait_job "$mid" && wait_job "$aid" || die "Slurm did not finish the jobs"
[ "$(tasks "$aid" | awk '{print $1, $2, $3}')" = "2 COMPLETED 0:0" ] && ok "KVQ_SHARDS=4 --array=2 ran shard 2/4" || bad "the rerun of task 2: $(tasks "$aid")"
ml=$(scontrol -o show job "$mid")
[ "$(field "$ml" JobState) $(field "$ml" ExitCode)" = "COMPLETED 0:0" ] && cmp -s single.json broken/report.json && cmp -s single.xml broken/report.xml \
  && ok "then the merge passes with the single run's reports, byte for byte" || bad "the merge after the rerun: $(field "$ml" JobState) $(field "$ml" ExitCode), or its reports differ"

# ---- 4. an array that is not 0..N-1 -----------------------------------------
echo "-- an array whose task IDs are not 0..N-1 (--array=1-2)"
aid=$(submit --array=1-2 "$RECIPE/slurm-verify.sbatch" c.vec ref-fast off) || die "sbatch failed"
wait_job "$aid" || die "Slurm did not finish the jobs"
[ "$(tasks "$aid" | awk '{print $1, $2, $3}' | tr '\n' ' ')" = "1 FAILED 2:0 2 FAILED 2:0 " ] && ok "both tasks refuse (exit 2)" \
  || bad "tasks of --array=1-2: $(tasks "$aid" | tr '\n' ' ')"
grep -q 'task IDs are 1..2 (2 tasks), not 0..1' "kvq-verify-${aid}_1.out" 2>/dev/null && ok "the log says why: $(head -n1 "kvq-verify-${aid}_1.out" | cut -c1-110)..." \
  || { bad "no reason in the log"; sed 's/^/      /' "kvq-verify-${aid}_1.out" 2>/dev/null | head -3; }
[ ! -e off ] && ok "nothing written by the refused tasks" || bad "the refused tasks wrote off/"
