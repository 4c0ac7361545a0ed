#!/usr/bin/env bash
# Usage: stalled_stage.sh LAUNCHER RANKS RANK PROGRAM [ARGS...]
# A rank of a pipelined model (PROGRAM: 2 stages, RANKS / 2 pipelines)
# that stops responding mid-step (SIGSTOP) ends the job within 10 s when
# TNT_COMM_TIMEOUT=5, with a message naming that rank, its stage and its
# pipeline ("rank 3 (stage 1 of 2, pipeline 1)"), by its rank in the job,
# whichever of the model's groups (its pipeline, its stage's replicas) the
# waiting rank noticed it in. PROGRAM prints a line starting with
# "Epoch 1/" once it is running.
set -u
launcher=$1; ranks=$2; victim=$3; program=$4; shift 4
fail() { echo "FAIL: $*"; [ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null; exit 1; }
log=$(mktemp)
marker="tnt-stage-stall-$$-$RANDOM"
"$launcher" -n "$ranks" --no-gpu -x TNT_COMM_TIMEOUT=5 -x "TNT_TEST_MARKER=$marker" -- \
  "$program" "$@" > "$log" 2>&1 &
job=$!
for _ in $(seq 900); do grep -q "^Epoch 1/" "$log" && break; sleep 0.1; done
grep -q "^Epoch 1/" "$log" || { cat "$log"; kill -KILL "$job" 2>/dev/null; fail "training did not start"; }
sleep 1

# shellcheck source=rank_pid.sh
. "$(dirname "$0")/rank_pid.sh"
pid=$(rank_pid "$program" "$marker" "$victim")
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
stage=$((victim % 2)); pipeline=$((victim / 2))
grep -qE "rank $victim \((on host [^)]*, )?stage $stage of 2, pipeline $pipeline\)" "$log" \
  || fail "no message names rank $victim as stage $stage of 2, pipeline $pipeline"
echo "PASS: rank $victim (stage $stage, pipeline $pipeline) stopped; the job ended after ${elapsed} s (status $status), naming it"
