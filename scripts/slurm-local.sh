#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests (tests/tuner/test_scale_out.cpp): munged with
# a fresh key, slurmctld and slurmd on localhost from a slurm.conf generated under WORKDIR, then an
# array job of 4 shards of CONFIG (`tiletune tune --shard auto`, each task finding its shard in
# SLURM_ARRAY_TASK_ID/COUNT) writing WORKDIR/db/tune-{shard}-{host}.db. The daemons are stopped on
# exit, whatever happens. Nothing outside WORKDIR is written.
#
#   scripts/slurm-local.sh TILETUNE CONFIG WORKDIR
#
# Exit 77 (skipped) where the cluster cannot be started here: not root (slurmd runs jobs as their
# user), or Debian's slurm-wlm or munge absent (scripts/install-deps.sh installs them).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 TILETUNE CONFIG WORKDIR" >&2; exit 64; }
exe=$(realpath "$1") config=$(realpath "$2") work=$(realpath -m "$3")  # the tasks run in WORKDIR
for tool in munged slurmctld slurmd sbatch sinfo; do
  command -v "$tool" >/dev/null || { echo "skipped: $tool not found (apt-get install slurm-wlm munge)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "skipped: a local Slurm cluster needs root"; exit 77; }
# A job array of 4 tasks must end well inside the test's time; the daemons start in seconds.
limit=${SLURM_LOCAL_TIMEOUT:-90}

mkdir -p "$work"/{munge,state,spool,log,db}
chmod 700 "$work/munge"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# munge: a key of its own and a socket in WORKDIR, so that a system munged is left alone.
head -c 1024 /dev/urandom > "$work/munge/key"
chmod 400 "$work/munge/key"
socket=$work/munge/munge.socket
munged --foreground --force --key-file="$work/munge/key" --socket="$socket" --pid-file="$work/munge/pid" \
  --log-file="$work/munge/log" --seed-file="$work/munge/seed" 2>>"$work/munge/log" &
pids+=($!)
for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { echo "munged did not start:"; cat "$work/munge/log"; exit 1; }

node=$(hostname -s)
cpus=$(nproc)
# Free ports in a range of their own, from this process's id: two runs at once do not collide.
port=$((20000 + ($$ % 5000) * 2))
export SLURM_CONF=$work/slurm.conf
cat > "$SLURM_CONF" <<EOF
ClusterName=tiletune-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=10 State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" > "$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" > "$work/log/slurmd.out" 2>&1 &
pids+=($!)
ready=0
for _ in $(seq 150); do
  if sinfo -h -n "$node" -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then ready=1; break; fi
  sleep 0.2
done
if [ $ready -eq 0 ]; then
  echo "the local Slurm cluster did not come up:"
  sinfo 2>&1 || true
  tail -n 20 "$work"/log/*.log "$work"/log/*.out 2>/dev/null || true
  exit 1
fi

# The sweep: 4 array tasks, each its own shard and database, one at a time (each asks for every
# CPU): on a machine of two cores, tasks timing kernels side by side would time each other's load.
# Waited for by polling squeue rather than with sbatch --wait, whose polls back off to 30 s apart
# (it doubled this test's time).
jobid=$(sbatch --parsable --array=0-3 --cpus-per-task="$cpus" --output="$work/log/task-%a.out" \
  --job-name=tiletune-shards --chdir="$work" \
  --wrap="'$exe' tune '$config' --shard auto --db '$work/db/tune-{shard}-{host}.db' --backend host --no-vendor --jobs 1")
echo "submitted array job $jobid"
deadline=$((SECONDS + limit))
while [ -n "$(squeue -h -j "$jobid" -o %i 2>/dev/null)" ]; do
  if [ $SECONDS -ge $deadline ]; then
    echo "the array job did not end within ${limit}s"
    squeue -j "$jobid" || true
    scancel "$jobid" || true
    exit 1
  fi
  sleep 0.5
done
for f in "$work"/log/task-*.out; do echo "== $f"; tail -n 5 "$f"; done
# Finished tasks stay known to slurmctld for MinJobAge (300 s): each must have COMPLETED (exit 0).
states=$(scontrol -o show job "$jobid" | grep -o 'JobState=[A-Z_]*' | sort | uniq -c)
echo "$states"
if [ "$(scontrol -o show job "$jobid" | grep -c 'JobState=COMPLETED')" -ne 4 ]; then
  echo "not every task completed"
  tail -n 20 "$work"/log/*.log 2>/dev/null || true
  exit 1
fi
ls "$work/db"
