#!/usr/bin/env bash
# A rank killed while a checkpoint is being written must leave the previous
# checkpoint intact and loadable. Three rounds, killing the master rank (the
# writer) at different moments of its save loop.
# Usage: killed_save.sh LAUNCHER SCENARIOS WORKDIR
set -u
launcher=$1; scenarios=$2; work=$3
for delay in 0.05 0.23 0.41; do
  rm -rf "$work"; mkdir -p "$work"
  "$launcher" -n 3 -- "$scenarios" checkpoint-loop "$work" > "$work/job.log" 2>&1 &
  # (the launcher exits non-zero on its own if the program cannot start)
  job=$!
  for _ in $(seq 200); do [ -f "$work/ready" ] && break; sleep 0.1; done
  [ -f "$work/ready" ] || { echo "FAIL: no first checkpoint"; cat "$work/job.log"; kill $job; exit 1; }
  sleep "$delay"
  kill -9 "$(cat "$work/pid.rank0")"
  wait $job; status=$?
  [ "$status" -ne 0 ] || { echo "FAIL: the job survived its master's death"; exit 1; }
  ls "$work" | grep -q 'ckpt.pt.tmp' && echo "(a half-written temporary file was left beside it, as expected)"
  "$scenarios" checkpoint-verify "$work" || { echo "FAIL: checkpoint unreadable after a kill at +${delay}s"; exit 1; }
done
rm -rf "$work"
echo "PASS: three kills during saving, the checkpoint stayed loadable each time"
