#!/usr/bin/env bash
# Usage: stalled_rank.sh LAUNCHER RANK PROGRAM [ARGS...]
# A rank that stops responding mid-run (SIGSTOP: what a hung device or a
# dead link looks like to its peers) ends the job within 10 s when
# TNT_COMM_TIMEOUT=5, with a message naming that rank, whether the rank
# stopped between collectives (the handshake times out) or inside one (the
# payload watchdog times out). PROGRAM prints a line starting with "Epoch 1/"
# once it is running. On the CPU (--no-gpu) whatever the machine has: the
# watchdogs under test are those of the MPI transport.
set -u
launcher=$1; victim=$2; lenet5=$3; shift 3
fail() { echo "FAIL: $*"; [ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null; exit 1; }
log=$(mktemp)
marker="tnt-stall-$$-$RANDOM"
"$launcher" -n 2 --no-gpu -x TNT_COMM_TIMEOUT=5 -x "TNT_TEST_MARKER=$marker" -- "$lenet5" "$@" \
  > "$log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "^Epoch 1/" "$log" && break; sleep 0.1; done
grep -q "^Epoch 1/" "$log" || { cat "$log"; fail "training did not start"; }
sleep 1

# The victim: the lenet5 process (not its wrapper) of rank $victim of this job.
# shellcheck source=rank_pid.sh
. "$(dirname "$0")/rank_pid.sh"
pid=$(rank_pid "$lenet5" "$marker" "$victim")
[ -n "$pid" ] || fail "no process of rank $victim found"
kill -STOP "$pid"
start=$(date +%s.%N)
while kill -0 "$job" 2>/dev/null; do
  elapsed=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')
  awk -v e="$elapsed" 'BEGIN { exit !(e > 30) }' && { kill -KILL "$job"; fail "the job was still running 30 s after rank $victim stopped"; }
  sleep 0.1
done
wait "$job"; status=$?
elapsed=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')
kill -KILL "$pid" 2>/dev/null
grep -v "^[0-9 ]*/[0-9]* \[" "$log" | grep -i "tarantella\|rank" | tail -6
[ "$status" -ne 0 ] || fail "the job exited 0"
awk -v e="$elapsed" 'BEGIN { exit !(e <= 10) }' || fail "the job took ${elapsed} s to end (limit 10 s)"
grep -qE "rank(\(s\))? $victim( |,|$)|rank $victim on host|master rank 0 did not confirm" "$log" \
  || fail "no message names rank $victim"
echo "PASS: rank $victim stopped; the job ended after ${elapsed} s (status $status), naming it"
