#!/usr/bin/env bash
# OpenMPI's remote-start agent for the simulated hosts of cluster.sh: used as
# plm_rsh_agent in place of ssh, it is called exactly like ssh,
#
#   netns_agent.sh HOST WORD...      (WORDs joined by spaces form a shell command)
#
# and runs the command inside HOST's network namespace instead of on another
# machine. HOST is a host's address (as in the hostfile), its name (tnt-h1) or
# its index (1). Like sshd, it gives the command the host's name (a UTS
# namespace of its own, so gethostname() and the launcher's messages name the
# simulated host) and the host's CPUs (taskset; see cluster.sh).
#
#   netns_agent.sh --argv HOST PROGRAM ARGS...   runs PROGRAM without a shell
set -euo pipefail
state=${TNT_CLUSTER_DIR:-/run/tnt-cluster}

argv_mode=0
if [ "${1:-}" = "--argv" ]; then argv_mode=1; shift; fi
host=${1:?usage: netns_agent.sh HOST COMMAND...}
shift
[ -f "$state/map" ] || { echo "netns_agent.sh: no cluster in $state: run cluster.sh up" >&2; exit 255; }

found=""
index=0
while read -r ns ip cpus _; do
  if [ "$host" = "$ip" ] || [ "$host" = "$ns" ] || [ "$host" = "$index" ]; then
    found="$ns $cpus"; break
  fi
  index=$((index + 1))
done <"$state/map"
if [ -z "$found" ]; then
  echo "netns_agent.sh: '$host' is not a host of the simulated cluster ($state/map)" >&2
  exit 255  # what ssh returns when it cannot reach a host
fi
read -r ns cpus <<<"$found"

# ssh crosses the network, so a host whose link is down (cluster.sh link
# HOST down) or that is gone (cluster.sh remove HOST) cannot be reached; the
# agent says so as ssh would, instead of entering the namespace from here.
if [ ! -e "/run/netns/$ns" ] ||
   [ "$(ip netns exec "$ns" cat /sys/class/net/eth0/operstate 2>/dev/null)" != up ]; then
  echo "ssh: connect to host $host port 22: No route to host (netns_agent.sh: $ns is down)" >&2
  exit 255
fi

# hostname runs in the new UTS namespace only; the command then replaces the
# shell, so OpenMPI's daemon is the process `mpirun` waits for, as with ssh.
enter=(ip netns exec "$ns" unshare --uts taskset -c "$cpus")
if (( argv_mode )); then
  exec "${enter[@]}" /bin/sh -c 'hostname "$0" && exec "$@"' "$ns" "$@"
fi
# OpenMPI asks its daemon to --daemonize, which matters over ssh (the session
# may close) but here would call setsid(): a new session is a new scheduler
# autogroup, so the ranks would lose the priority of the launching session
# (run.sh --high-priority) while compute-only runs keep it. The daemon stays
# in the agent's session instead; mpirun tracks it as it tracks ssh.
command=" $* "
command=${command// --daemonize / }
exec "${enter[@]}" /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$ns" "$command"
