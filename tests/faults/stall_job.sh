# Sourced by the stalled-rank fault tests (stalled_rank.sh, stalled_stage.sh):
# stall_job LAUNCHER RANKS VICTIM PROGRAM [ARGS...] starts PROGRAM on RANKS
# ranks with TNT_COMM_TIMEOUT=5, waits until it prints a line starting with
# "Epoch 1/", stops rank VICTIM's process (SIGSTOP: what a hung device or a
# dead link looks like to its peers; STALL_SIGNAL=KILL kills it instead)
# and waits for the job to end, failing
# if it runs 30 s past the stop or ends with status 0 or after more than
# 15 s (the timeout plus 10: the stack question, mpirun's teardown, a loaded
# machine). Leaves the job's output in $log and the time to its end in $elapsed.
# The caller defines fail().
# shellcheck source=rank_pid.sh
. "$(dirname "${BASH_SOURCE[0]}")/rank_pid.sh"

stall_job() {
  local launcher=$1 ranks=$2 victim=$3 program=$4 job status start
  shift 4
  log=$(mktemp)
  local marker="tnt-stall-$$-$RANDOM"
  "$launcher" -n "$ranks" --no-gpu -x TNT_COMM_TIMEOUT=5 -x "TNT_TEST_MARKER=$marker" -- \
    "$program" "$@" > "$log" 2>&1 &
  job=$!
  for _ in $(seq 900); do grep -q "^Epoch 1/" "$log" && break; sleep 0.1; done
  grep -q "^Epoch 1/" "$log" || { cat "$log"; kill -KILL "$job" 2>/dev/null; fail "training did not start"; }
  sleep 1
  # The victim: the program's process (not its wrapper) of rank $victim of this job.
  pid=$(rank_pid "$program" "$marker" "$victim")
  [ -n "$pid" ] || fail "no process of rank $victim found"
  kill -"${STALL_SIGNAL:-STOP}" "$pid"
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
  awk -v e="$elapsed" 'BEGIN { exit !(e <= 15) }' || fail "the job took ${elapsed} s to end (limit 15 s: the timeout plus 10)"
  job_status=$status
}
