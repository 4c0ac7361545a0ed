#!/usr/bin/env bash
# A real Slurm (Debian's 22.05) on the simulated hosts of cluster.sh, so that
# `tarantella` can be tried inside sbatch, salloc and srun jobs on one machine.
#
# munged and slurmctld run in the root namespace (the "login node", where the
# launcher runs under salloc), slurmctld listening on the cluster's bridge
# address; every simulated host runs its own slurmd inside its network
# namespace, with the host's name (UTS namespace) and its share of the CPUs,
# as netns_agent.sh gives OpenMPI's daemons. Every file (configuration, munge
# key and socket, state, logs, PMIx temporary folders) lives in
# $TNT_CLUSTER_DIR/slurm, so nothing of the system's own Slurm or munge is
# touched; clients find this Slurm through SLURM_CONF.
#
#   slurm.sh up      start the daemons (after cluster.sh up); waits until all nodes are idle
#   slurm.sh down    stop them and remove $TNT_CLUSTER_DIR/slurm
#   slurm.sh env     print the SLURM_CONF assignment for clients (eval it)
#
# Example:
#   bench/cluster/cluster.sh up --hosts 2 && bench/cluster/slurm.sh up
#   export $(bench/cluster/slurm.sh env)
#   salloc -N2 -n2 build/bin/tarantella --network-interface 10.77.77.0/24 -- build/examples/lenet5/lenet5
#   bench/cluster/slurm.sh down && bench/cluster/cluster.sh down
#
# Notes on the choices, each learnt the hard way:
# * slurmd enters the namespace with nsenter, not `ip netns exec`: the latter
#   remounts /sys, hiding /sys/fs/cgroup, and slurmd 22.05 refuses to start
#   without a cgroup file system even with proctrack/linuxproc.
# * TmpFS=.../tmp/%n: srun --mpi=pmix makes /tmp/spmix_appdir_UID_STEP on
#   every node; two slurmds sharing one /tmp would collide on it.
# * SlurmdParameters=config_overrides: each slurmd sees all CPUs of the
#   machine through hwloc but is pinned to its share; the configuration wins.
# Needs root, munge, slurmctld, slurmd, slurm-client (scripts/install-deps.sh).
set -euo pipefail

state=${TNT_CLUSTER_DIR:-/run/tnt-cluster}
dir=$state/slurm

die() { echo "slurm.sh: $*" >&2; exit 2; }

need_tools() {
  [ "$(id -u)" = 0 ] || die "needs root (the daemons run as root here)"
  local tool
  for tool in munged slurmctld slurmd sinfo nsenter unshare taskset; do
    command -v "$tool" >/dev/null ||
      die "$tool is not installed (apt-get install munge slurmctld slurmd slurm-client util-linux)"
  done
  [ -f "$state/map" ] || die "no simulated cluster in $state: run cluster.sh up first"
}

# Ports from the subnet's third octet: two clusters side by side (a test and
# a benchmark) get their own controller.
ports() {
  local octet
  octet=$(cut -d. -f3 "$state/subnet")
  echo "$((16000 + octet)) $((17000 + octet))"
}

write_config() {
  local ctld_port slurmd_port cores ns ip
  read -r ctld_port slurmd_port <<<"$(ports)"
  # At least 2 CPUs per node, so that 2 tasks fit on a node even on a 1-core
  # machine (config_overrides: Slurm believes the configuration).
  cores=$(nproc)
  (( cores >= 2 )) || cores=2
  {
    echo "# made by bench/cluster/slurm.sh for the cluster in $state"
    echo "ClusterName=tnt$(cut -d. -f3 "$state/subnet")"
    echo "SlurmctldHost=$(hostname -s)($(cat "$state/subnet").1)"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmdPort=$slurmd_port"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/munge.sock"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "TmpFS=$dir/tmp/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "SlurmdParameters=config_overrides"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SchedulerType=sched/builtin"
    echo "InactiveLimit=0"
    echo "KillWait=2"
    echo "MinJobAge=30"
    while read -r ns ip _; do
      echo "NodeName=$ns NodeAddr=$ip CPUs=$cores State=UNKNOWN"
    done <"$state/map"
    echo "PartitionName=tnt Nodes=ALL Default=YES MaxTime=30 State=UP"
  } >"$dir/slurm.conf"
}

start_munge() {
  mkdir -p "$dir/munge"
  chmod 755 "$dir" "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed"
}

start_slurmd() {  # NS CPUS
  mkdir -p "$dir/spool/$1" "$dir/tmp/$1"
  nsenter --net="/run/netns/$1" unshare --uts taskset -c "$2" \
    sh -c 'hostname "$0" && exec slurmd -f "$1" -N "$0"' "$1" "$dir/slurm.conf"
}

# All nodes idle, or the daemons' own words about why not.
wait_until_idle() {
  local deadline=$((SECONDS + 30)) states
  while :; do
    states=$(SLURM_CONF=$dir/slurm.conf sinfo -h -N -o %T 2>/dev/null | sort -u | paste -sd' ')
    [ "$states" = idle ] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "slurm.sh: the nodes are not idle after 30 s (sinfo: '${states:-no answer}'); logs:" >&2
      tail -n 5 "$dir"/log/*.log >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

cmd_up() {
  need_tools
  cmd_down
  mkdir -p "$dir/state" "$dir/log"
  write_config
  start_munge
  slurmctld -f "$dir/slurm.conf"
  local ns ip cpus
  while read -r ns ip cpus _; do start_slurmd "$ns" "$cpus"; done <"$state/map"
  wait_until_idle
  echo "slurm.sh: Slurm up on $(cut -d' ' -f1 "$state/map" | paste -sd' ') (SLURM_CONF=$dir/slurm.conf)" >&2
}

# Stops exactly the daemons this script started (their pid files), then
# anything their jobs left inside the hosts is removed by cluster.sh down.
cmd_down() {
  [ -d "$dir" ] || return 0
  local pidfile pid
  for pidfile in "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  env) echo "SLURM_CONF=$dir/slurm.conf" ;;
  *) die "usage: slurm.sh up | down | env" ;;
esac
