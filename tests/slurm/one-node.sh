#!/usr/bin/env bash
# End to end on a real Slurm: bring up Debian's slurm-wlm (slurmctld, slurmd,
# munge) as a one-node cluster on loopback, run tests/slurm/smoke.toml as a
# 4-task job array with `dpaudit slurm --submit`, and check that the merged
# scores.csv and audit.json equal a single-process `dpaudit run` byte for byte.
#
#   sudo tests/slurm/one-node.sh [path/to/dpaudit]      (default: target/release/dpaudit)
#
# Needs root (the daemons run as root on private ports, with their state in a
# temporary directory) and the Debian packages slurm-wlm and munge, which it
# installs when they are missing. Every daemon it starts is stopped on exit.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dpaudit=${1:-$root/target/release/dpaudit}
dpaudit=$(readlink -f "$dpaudit")
[ -x "$dpaudit" ] || { echo "one-node.sh: no dpaudit binary at $dpaudit (build it first)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "one-node.sh: run as root (the Slurm daemons need it)" >&2; exit 2; }
start_time=$(date +%s)

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "==> installing slurm-wlm and munge"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
fi

state=$(mktemp -d /tmp/dpaudit-slurm.XXXXXX)
chmod 755 "$state"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$state"
}
trap cleanup EXIT

host=$(hostname -s)
# Private ports, so that a cluster already on this machine is not disturbed.
base=$((20000 + ($$ % 20000)))
mkdir -p "$state/munge" "$state/ctld" "$state/spool" "$state/work"

echo "==> munge"
dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$state/munge/munge.key"
munged --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
    --pid-file="$state/munge/munged.pid" --log-file="$state/munge/munged.log" \
    --seed-file="$state/munge/munged.seed"
for _ in $(seq 50); do [ -s "$state/munge/munged.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$state/munge/munged.pid")")

echo "==> slurm.conf (one node, $(nproc) CPUs, ports $base/$((base + 1)))"
cat > "$state/slurm.conf" <<CONF
ClusterName=dpaudit-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
AuthInfo=socket=$state/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$state/slurm.conf

echo "==> slurmctld, slurmd"
slurmctld -D -f "$SLURM_CONF" >"$state/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$state/slurmd.out" 2>&1 &
pids+=($!)
for i in $(seq 100); do
    if sinfo -h -o %T 2>/dev/null | grep -q idle; then break; fi
    if [ "$i" = 100 ]; then
        echo "one-node.sh: the node did not become idle" >&2
        tail -20 "$state/slurmctld.log" "$state/slurmd.log" >&2 || true
        exit 1
    fi
    sleep 0.2
done
sinfo

echo "==> dpaudit slurm: 4 array tasks + merge"
cd "$state/work"
cp "$root/tests/slurm/smoke.toml" smoke.toml
export OMP_NUM_THREADS=1
"$dpaudit" slurm smoke.toml --out-dir cluster --tasks 4 --submit
for i in $(seq 600); do
    [ -z "$(squeue -h 2>/dev/null)" ] && break
    sleep 0.5
done
if [ -n "$(squeue -h)" ]; then
    echo "one-node.sh: jobs still queued after 5 minutes" >&2
    squeue >&2
    exit 1
fi
cat cluster/slurm/merge.log
[ -f cluster/audit.json ] || { echo "one-node.sh: the merge job did not finish the audit" >&2; tail -5 cluster/slurm/*.log >&2; exit 1; }

echo "==> the same experiment in one process"
"$dpaudit" run smoke.toml --out-dir single --quiet >/dev/null
for f in scores.csv audit.json; do
    cmp "cluster/$f" "single/$f"
    echo "$f: identical ($(wc -c < "single/$f") bytes)"
done
echo "==> passed in $(( $(date +%s) - start_time )) s"
