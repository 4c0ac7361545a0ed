#!/usr/bin/env bash
# Bad command lines are refused with exit status 2 and a message that names
# the bad value; nothing is started.
source "$(dirname "$0")/lib.sh"

check() {  # NAME EXPECTED-MESSAGE ARGS...
  local name=$1 message=$2
  shift 2
  run "$@"
  expect_status "$name: exit status 2" 2
  expect_contains "$name: message" "$ERR" "$message"
}

check "unknown log level" "--log-level 'LOUD' is not a log level" --log-level LOUD -- /bin/true
check "malformed -x" "-x 'NOVALUE': expected VAR=VALUE" -x A=1 NOVALUE -- /bin/true
check "invalid -x name" "'1A' is not a valid variable name" -x 1A=2 -- /bin/true
check "missing program" "missing program" -n 2
check "nothing after --" "missing program" -n 2 --
check "program without --" "unexpected argument '/bin/true'" -n 2 /bin/true
check "-n 0" "-n 0: the number of ranks must be a whole number, at least 1" -n 0 -- /bin/true
check "--n-per-node 0" "--n-per-node 0" --n-per-node 0 -- /bin/true
check "-n with --n-per-node" "-n 2 and --n-per-node 2 both set the ranks per node" -n 2 --n-per-node 2 -- /bin/true
check "negative fusion threshold" "--fusion-threshold '-5'" --fusion-threshold -5 -- /bin/true
check "unbalanced interpreter quote" "cannot be split into words" --python-interpreter "python3 'x" -- /bin/true
check "program not found" "program no-such-program-$MARK not found" -n 1 -- "no-such-program-$MARK"
check "relative program not found" "program ./missing-$MARK not found" -n 1 -- "./missing-$MARK"
check "unknown flag" "--frobnicate" --frobnicate -- /bin/true
check "bad --network-interface" "--network-interface '10.0.0.0/40': '10.0.0.0/40' is neither an interface name" --network-interface 10.0.0.0/40 -- /bin/true
check "negative --max-restarts" "--max-restarts -1: the number of restarts must be a whole number, at least 0" --max-restarts -1 -- /bin/true
check "--max-restarts not a number" "--max-restarts many: the number of restarts" --max-restarts many -- /bin/true
check "--min-ranks without --hostfile" "--min-ranks 2 only applies with --hostfile" --max-restarts 1 --min-ranks 2 -- /bin/true
check "--force alone" "--force only applies to --cleanup" --force -- /bin/true

# Pinning is checked on this node before anything starts.
numa_nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
[ "$numa_nodes" -lt 1 ] && numa_nodes=1
too_many=$((numa_nodes + 1))
check "more ranks than NUMA nodes" "--pin-to-socket: $too_many ranks per node but this node has only $numa_nodes NUMA node(s)" \
  --pin-to-socket -n "$too_many" --no-gpu -- /bin/true

finish
