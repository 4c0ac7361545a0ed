#!/usr/bin/env bash
# A cluster of K simulated hosts on this machine, for multi-host runs of
# `tarantella --hostfile` without a second machine.
#
# Each host is a Linux network namespace (tnt-h0, tnt-h1, ...) whose one
# interface is a veth pair plugged into a bridge (tnt-br0) in the root
# namespace; the launcher runs in the root namespace (the bridge has an
# address, 10.77.77.1) and reaches every host over the bridge. Both ends of
# every link are shaped by a tbf qdisc, so a rank's traffic leaves its host at
# the link rate and enters the other host at the link rate, as on a switched
# network with one NIC per host (no added delay: this kernel has no netem).
#
# OpenMPI starts its daemon on a "host" through netns_agent.sh (used as
# plm_rsh_agent instead of ssh), which enters the namespace, gives the daemon
# the host's name (its own UTS namespace) and, unless --no-cpu-split was
# given, the host's share of the CPUs: on a 2-core machine host 0 owns CPU 0
# and host 1 CPU 1, so each rank's thread rule sees one core, as a rank on a
# one-core node would.
#
#   cluster.sh up [--hosts K] [--rate 10gbit] [--no-cpu-split]   create (or re-create) the cluster
#   cluster.sh rate RATE            change every link's rate (1gbit, 10gbit, 25gbit, ...)
#   cluster.sh down                 remove everything `up` created; nothing else
#   cluster.sh status               what exists now
#   cluster.sh flags                the launcher flags for a run on the cluster
#   cluster.sh exec HOST CMD...     run a command on host HOST (index or name)
#   cluster.sh link HOST down|up    cut or restore HOST's link (both ends of its veth):
#                                   its traffic stops, and the agent refuses it as ssh
#                                   would ("No route to host"); its processes go on
#   cluster.sh remove HOST          kill every process on HOST and delete its namespace
#                                   (a node that died); `down` still cleans up
#
# Example:
#   bench/cluster/cluster.sh up --hosts 2 --rate 10gbit
#   build/bin/tarantella $(bench/cluster/cluster.sh flags) --no-gpu -- build/examples/lenet5/lenet5
#   bench/cluster/cluster.sh down
#
# Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), iproute2 (ip, tc) and util-linux
# (unshare, taskset). The cluster's description lives in $TNT_CLUSTER_DIR
# (default /run/tnt-cluster): hostfile, name->address map, the agent to give
# OpenMPI, and the list of what was created, which is all `down` removes.
# Both `up` and `down` are idempotent; `up` on an existing cluster first takes
# it down. Two clusters can exist side by side (a test next to a benchmark)
# with different TNT_CLUSTER_DIR, TNT_CLUSTER_PREFIX (names: PREFIX-h0,
# PREFIX-br0; default tnt) and TNT_CLUSTER_SUBNET (first three octets of a
# /24; default 10.77.77).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=${TNT_CLUSTER_DIR:-/run/tnt-cluster}
prefix=${TNT_CLUSTER_PREFIX:-tnt}
bridge=${prefix}-br0
subnet=${TNT_CLUSTER_SUBNET:-10.77.77}   # a /24; host i is .(11+i), the bridge .1
bridge_ip=$subnet.1

die() { echo "cluster.sh: $*" >&2; exit 2; }

host_ns() { echo "${prefix}-h$1"; }
host_ip() { echo "$subnet.$((11 + $1))"; }
host_veth() { echo "${prefix}-h$1-br"; }   # root-side end; the namespace's end is eth0

# The bucket must hold 500 us of traffic and at least 256 KiB: tbf splits a
# GSO packet larger than the bucket into 1500-byte segments (64 KiB: 1 Gbit/s
# became 0.65), and a bucket shorter than the qdisc watchdog's wake-up delay
# cannot reach the rate. 1gbit -> 256 KiB, 10gbit -> 625 KB, 25gbit -> 1.56 MB.
# The bucket lets a burst pass at veth speed after idle time; for transfers of
# megabytes that is well under a millisecond of error.
rate_bits() {
  local r=${1,,}
  case $r in
    *gbit) echo $(( ${r%gbit} * 1000000000 )) ;;
    *mbit) echo $(( ${r%mbit} * 1000000 )) ;;
    *) die "rate '$1': give it as NNgbit or NNmbit, e.g. 10gbit" ;;
  esac
}
burst_bytes() {
  local b=$(( $(rate_bits "$1") / 8 / 2000 ))
  (( b < 262144 )) && b=262144
  echo "$b"
}

shape() {  # shape NETNS(or "") DEV RATE
  local ns=$1 dev=$2 rate=$3 burst
  burst=$(burst_bytes "$rate")
  local cmd=(tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms)
  if [ -n "$ns" ]; then ip netns exec "$ns" "${cmd[@]}"; else "${cmd[@]}"; fi
}

need_root() {
  [ "$(id -u)" = 0 ] || die "needs root (CAP_NET_ADMIN) to create network namespaces"
  command -v ip >/dev/null && command -v tc >/dev/null || die "needs iproute2 (apt-get install iproute2)"
  command -v unshare >/dev/null && command -v taskset >/dev/null ||
    die "needs unshare and taskset (apt-get install util-linux)"
}

# Everything `up` creates is recorded in $state/created before it is made, so
# an interrupted `up` is still undone by `down`.
record() { echo "$1 $2" >>"$state/created"; }

# Names that exist already belong to someone else (another cluster with its
# own TNT_CLUSTER_DIR, or the system): stop before touching anything.
check_free() {
  local i names=("$bridge")
  for ((i = 0; i < $1; i++)); do names+=("$(host_veth "$i")"); done
  for name in "${names[@]}"; do
    ! ip link show "$name" >/dev/null 2>&1 ||
      die "interface $name exists and is not in $state/created: take down the cluster that made it" \
          "(TNT_CLUSTER_DIR=... cluster.sh down) or choose another TNT_CLUSTER_PREFIX"
  done
  for ((i = 0; i < $1; i++)); do
    [ ! -e "/run/netns/$(host_ns "$i")" ] ||
      die "network namespace $(host_ns "$i") exists and is not in $state/created: take down the" \
          "cluster that made it or choose another TNT_CLUSTER_PREFIX"
  done
  ! ip -4 addr show | grep -q "inet $subnet\." ||
    die "subnet $subnet.0/24 is in use here: choose another TNT_CLUSTER_SUBNET"
}

cmd_down() {
  [ -f "$state/created" ] || { rm -rf "$state"; return 0; }
  local kind name
  # Reverse order of creation: each host's link and namespace before the
  # bridge. Processes still inside a host's namespace were started there by
  # this cluster (OpenMPI daemons, ranks, probes); they are stopped first.
  tac "$state/created" | while read -r kind name; do
    case $kind in
      netns) ip netns pids "$name" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
             ip netns del "$name" 2>/dev/null || true ;;
      link) ip link del "$name" 2>/dev/null || true ;;
      netnsdir) rm -rf "/etc/netns/$name" ;;
      dir) rmdir "$name" 2>/dev/null || true ;;  # only if nothing else was put there
    esac
  done
  rm -rf "$state"
}

cmd_up() {
  local hosts=2 rate=10gbit cpu_split=1
  while [ $# -gt 0 ]; do
    case $1 in
      --hosts) hosts=${2:?}; shift 2 ;;
      --rate) rate=${2:?}; shift 2 ;;
      --no-cpu-split) cpu_split=0; shift ;;
      *) die "up: unknown argument '$1' (use --hosts K, --rate RATE, --no-cpu-split)" ;;
    esac
  done
  [[ $hosts =~ ^[0-9]+$ ]] && (( hosts >= 1 && hosts <= 200 )) || die "--hosts $hosts: give 1 to 200"
  [[ $prefix =~ ^[a-z][a-z0-9]{0,5}$ ]] ||
    die "TNT_CLUSTER_PREFIX '$prefix': 1 to 6 lower-case letters or digits (interface names are short)"
  [[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "TNT_CLUSTER_SUBNET '$subnet': give three octets, e.g. 10.77.77"
  [[ $state == /* && $state != *[[:space:]]* ]] ||
    die "TNT_CLUSTER_DIR '$state': give an absolute path without blanks (it goes into launcher flags)"
  rate_bits "$rate" >/dev/null
  need_root
  cmd_down
  check_free "$hosts"
  mkdir -p "$state"
  : >"$state/created"
  local cores
  cores=$(nproc)

  if [ ! -d /etc/netns ]; then record dir /etc/netns; mkdir /etc/netns; fi
  record link "$bridge"
  ip link add "$bridge" type bridge
  ip addr add "$bridge_ip/24" dev "$bridge"
  ip link set "$bridge" up

  local i ns veth ip cpus
  : >"$state/hosts"
  for ((i = 0; i < hosts; i++)); do
    echo "$(host_ip "$i") $(host_ns "$i")" >>"$state/hosts"
  done
  for ((i = 0; i < hosts; i++)); do
    ns=$(host_ns "$i"); veth=$(host_veth "$i"); ip=$(host_ip "$i")
    record netns "$ns"
    ip netns add "$ns"
    record link "$veth"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$bridge" up
    ip netns exec "$ns" ip addr add "$ip/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    shape "" "$veth" "$rate"
    shape "$ns" eth0 "$rate"
    # `ip netns exec` bind-mounts /etc/netns/NS/hosts over /etc/hosts, so
    # inside a host every name of the cluster resolves.
    record netnsdir "$ns"
    mkdir -p "/etc/netns/$ns"
    { echo "127.0.0.1 localhost"; echo "$bridge_ip ${prefix}-head"; cat "$state/hosts"; } \
      >"/etc/netns/$ns/hosts"
    cpus=$(( i % cores ))
    (( cpu_split )) || cpus=0-$((cores - 1))
    echo "$ns $ip $cpus $veth" >>"$state/map"
  done
  # Addresses, not names, in the hostfile: the launching node (root
  # namespace) has no entry for them in its /etc/hosts, and we do not touch it.
  { echo "# simulated hosts ($hosts at $rate), made by bench/cluster/cluster.sh"
    for ((i = 0; i < hosts; i++)); do echo "$(host_ip "$i")   # $(host_ns "$i")"; done
  } >"$state/hostfile"
  echo "$rate" >"$state/rate"
  echo "$subnet" >"$state/subnet"
  # The agent OpenMPI calls, bound to this cluster's description.
  printf '#!/bin/sh\nTNT_CLUSTER_DIR=%s exec %s "$@"\n' "$state" "$here/netns_agent.sh" \
    >"$state/agent"
  chmod +x "$state/agent"
  echo "cluster.sh: $hosts host(s) at $rate: $(cut -d' ' -f2 "$state/hosts" | paste -sd' ')" \
       "(hostfile $state/hostfile)" >&2
}

cmd_rate() {
  local rate=${1:?rate: give a rate such as 10gbit}
  rate_bits "$rate" >/dev/null
  [ -f "$state/map" ] || die "no cluster: run cluster.sh up first"
  local ns ip cpus veth
  while read -r ns ip cpus veth; do
    shape "" "$veth" "$rate"
    shape "$ns" eth0 "$rate"
  done <"$state/map"
  echo "$rate" >"$state/rate"
}

cmd_status() {
  if [ ! -f "$state/map" ]; then echo "no cluster ($state)"; return 0; fi
  echo "cluster in $state at $(cat "$state/rate"):"
  local ns ip cpus veth
  while read -r ns ip cpus veth; do
    echo "  $ns $ip cpus $cpus: $(ip netns exec "$ns" tc qdisc show dev eth0 | head -1)"
  done <"$state/map"
}

# The launcher flags of a run on the cluster: OpenMPI starts daemons through
# our agent, and both its out-of-band and its TCP byte transfer use only the
# cluster's subnet (the root namespace has other interfaces; the hosts have
# only eth0 and lo). No shared memory between hosts: btl self,tcp.
cmd_flags() {
  [ -f "$state/hostfile" ] || die "no cluster: run cluster.sh up first"
  local subnet
  subnet=$(cat "$state/subnet")
  echo "--hostfile $state/hostfile" \
       "--mca plm_rsh_agent $state/agent" \
       "--mca plm_rsh_no_tree_spawn 1" \
       "--mca btl self,tcp" \
       "--mca btl_tcp_if_include $subnet.0/24" \
       "--mca oob_tcp_if_include $subnet.0/24"
}

# A host's line of the map (namespace, address, cpus, veth) by index, name
# or address.
host_line() {
  local host=$1 index=0 ns ip cpus veth
  [ -f "$state/map" ] || die "no cluster: run cluster.sh up first"
  while read -r ns ip cpus veth; do
    if [ "$host" = "$ip" ] || [ "$host" = "$ns" ] || [ "$host" = "$index" ]; then
      echo "$ns $ip $cpus $veth"; return 0
    fi
    index=$((index + 1))
  done <"$state/map"
  die "'$host' is not a host of the cluster in $state"
}

# Both ends go down, so neither side's packets reach the bridge: a cable
# pulled. TCP connections stay open and retransmit, as on a real flap.
cmd_link() {
  local host=${1:?link: name a host} updown=${2:-}
  [ "$updown" = up ] || [ "$updown" = down ] || die "link $host: say up or down"
  local ns ip cpus veth
  read -r ns ip cpus veth <<<"$(host_line "$host")"
  ip link set "$veth" "$updown"
  ip netns exec "$ns" ip link set eth0 "$updown"
}

# A host that dies: every process in its namespace is killed, then the
# namespace (and with it its veth pair) is deleted. The map keeps the host,
# so the hostfile still names it and the agent answers "No route to host".
cmd_remove() {
  local host=${1:?remove: name a host}
  local ns ip cpus veth
  read -r ns ip cpus veth <<<"$(host_line "$host")"
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  ip link del "$veth" 2>/dev/null || true
}

cmd_exec() {
  local host=${1:?exec: name a host}; shift
  TNT_CLUSTER_DIR=$state exec "$here/netns_agent.sh" --argv "$host" "$@"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) shift; need_root; cmd_down ;;
  rate) shift; need_root; cmd_rate "$@" ;;
  status) cmd_status ;;
  flags) cmd_flags ;;
  exec) shift; cmd_exec "$@" ;;
  link) shift; need_root; cmd_link "$@" ;;
  remove) shift; need_root; cmd_remove "$@" ;;
  *) die "usage: cluster.sh up [--hosts K] [--rate 10gbit] [--no-cpu-split] | rate RATE | down | status | flags | exec HOST CMD... | link HOST down|up | remove HOST" ;;
esac
