#!/usr/bin/env bash
# fracsim sweep --slurm on a real single-node Slurm cluster (Debian's slurm-wlm and munge), which
# this test starts in a directory of its own, on free ports, and stops again, even on failure.
# Its sweep.csv must equal a local run's but for the wall-time column, with and without
# --no-wait (then --gather). Usage: test_slurm_sweep.sh FRACSIM SOURCE_DIR. Exit 77: skipped.
set -euo pipefail

fracsim=$1
src=$2
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: the Slurm test starts slurmctld, slurmd and munged, which needs root"
  exit 77
fi
for c in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$c" >/dev/null || { echo "error: $c not found (scripts/setup installs slurm-wlm and munge)"; exit 1; }
done

D=$(mktemp -d /tmp/fracsim-slurm.XXXXXX)
chmod 755 "$D"  # munged wants every directory above its socket searchable
ctld_pid="" slurmd_pid=""
cleanup() {
  set +e
  if [ -n "$ctld_pid" ]; then
    SLURM_CONF=$D/etc/slurm.conf scontrol shutdown >/dev/null 2>&1
    for _ in $(seq 100); do
      kill -0 "$ctld_pid" 2>/dev/null || { [ -n "$slurmd_pid" ] && kill -0 "$slurmd_pid" 2>/dev/null; } || break
      sleep 0.1
    done
    kill -9 "$ctld_pid" ${slurmd_pid:+"$slurmd_pid"} 2>/dev/null
  fi
  [ -f "$D/munge/munged.pid" ] && kill "$(cat "$D/munge/munged.pid")" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT

# Two free TCP ports.
read -r ctld_port slurmd_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')

mkdir -p "$D"/{etc,munge,state,spool,log}
chmod 755 "$D/munge"
mungekey -c -k "$D/munge/munge.key"
chmod 600 "$D/munge/munge.key"
munged --key-file="$D/munge/munge.key" --socket="$D/munge/munge.socket.2" \
  --pid-file="$D/munge/munged.pid" --seed-file="$D/munge/munged.seed" \
  --log-file="$D/munge/munged.log"

mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
: >"$D/etc/plugstack.conf"
cat >"$D/etc/slurm.conf" <<EOF
ClusterName=fracsim-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket.2
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
PlugStackConfig=$D/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$D/etc/slurm.conf
slurmctld -D -i >"$D/log/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N localhost >"$D/log/slurmd.out" 2>&1 &
slurmd_pid=$!
for _ in $(seq 300); do
  [ "$(sinfo -h -o %T 2>/dev/null)" = "idle" ] && break
  sleep 0.1
done
if [ "$(sinfo -h -o %T 2>/dev/null)" != "idle" ]; then
  echo "error: the test cluster did not come up; its logs:"
  tail -n 20 "$D"/log/*
  exit 1
fi
echo "cluster up (slurmctld port $ctld_port, slurmd port $slurmd_port)"

cd "$src"
spec=tests/cli/sweep-small.yaml
"$fracsim" sweep "$spec" -j 2 --out "$D/local" >/dev/null 2>&1
"$fracsim" sweep "$spec" --slurm --partition debug --out "$D/slurm"
# Every column but the last (wall_seconds), row by row.
strip() { sed 's/,[^,]*$//' "$1"; }
if ! diff <(strip "$D/local/sweep.csv") <(strip "$D/slurm/sweep.csv"); then
  echo "error: the Slurm sweep's CSV differs from the local one (above)"
  exit 1
fi
[ "$(wc -l <"$D/slurm/sweep.csv")" -eq 9 ] || { echo "error: expected 8 rows"; exit 1; }

# --no-wait, then --gather once the array has left the queue.
out=$("$fracsim" sweep "$spec" --slurm --no-wait --out "$D/later" 2>&1)
echo "$out"
job=$(echo "$out" | sed -n 's/.*submitted job array \([0-9]*\).*/\1/p')
[ -n "$job" ] || { echo "error: no job id in the output"; exit 1; }
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.1
done
"$fracsim" sweep --gather "$D/later"
if ! diff <(strip "$D/local/sweep.csv") <(strip "$D/later/sweep.csv"); then
  echo "error: the --no-wait sweep's gathered CSV differs from the local one (above)"
  exit 1
fi
echo "ok: the Slurm sweeps' CSVs equal the local one but for wall_seconds"
