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
# shellcheck source=stall_job.sh
. "$(dirname "$0")/stall_job.sh"
stall_job "$launcher" 2 "$victim" "$lenet5" "$@"
grep -qE "rank(\(s\))? $victim( |,|$)|rank $victim on host|master rank 0 did not confirm" "$log" \
  || fail "no message names rank $victim"
echo "PASS: rank $victim stopped; the job ended after ${elapsed} s (status $job_status), naming it"
