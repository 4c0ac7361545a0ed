#!/usr/bin/env bash
# kill -9 of the launcher (what the OOM killer and batch schedulers send)
# mid-run leaves nothing of the job behind: within 5 s mpirun, the rank
# wrappers and the programs are all gone. First with a shell that sleeps,
# then, when its path is given, with the LeNet-5 example while it trains.
# Usage: launcher_killed.sh TARANTELLA [LENET5]
source "$(dirname "$0")/lib.sh"

LENET5=${2:+$(realpath "$2")}  # absolute, as the launcher passes it on

# killed_case NAME READY-REGEX READY-COUNT ARGS...: starts the launcher with
# ARGS, waits until READY-COUNT processes match READY-REGEX and two seconds
# more, kills the launcher with SIGKILL and checks what is left.
killed_case() {
  local name=$1 ready=$2 count=$3
  shift 3
  "$TARANTELLA" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null &
  local launcher=$!
  if ! wait_for_count "$ready" "$count" 60; then
    fail "$name: the ranks did not start"
    cat "$WORK/err"
    kill -9 "$launcher"
    return
  fi
  pass "$name: $count ranks running"
  sleep 2  # mid-run: MPI is up and LeNet-5 is training
  local start
  start=$(date +%s%N)
  kill -9 "$launcher"
  wait "$launcher" 2>/dev/null
  if wait_for_count "$MARK" 0 5; then
    pass "$name: nothing of the job left $(( ($(date +%s%N) - start) / 1000000 )) ms after kill -9"
  else
    fail "$name: left 5 s after kill -9: $(ps -o pid,args -p "$(live_pids "$MARK" | paste -sd,)")"
    pkill -KILL -f "$MARK"
    wait_for_count "$MARK" 0 5
  fi
}

SLEEP=$(marked_sleep)
killed_case "sleeping ranks" "^$SLEEP 60" 2 -n 2 --no-gpu -- sh -c "$SLEEP 60; true"

if [ -n "$LENET5" ]; then
  # The marker rides on the data directory, which is on every command line
  # of the job (mpirun's, the wrappers', the programs').
  ln -s /usr/share/datasets/fashion-mnist "$WORK/data-$MARK"
  killed_case "training LeNet-5" "^$LENET5 .*$MARK" 2 -n 2 --no-gpu -- \
    "$LENET5" --epochs 20 --verbose 2 --data-dir "$WORK/data-$MARK"
else
  echo "SKIP: LeNet-5: no path to the example given"
fi

finish
