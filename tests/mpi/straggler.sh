#!/usr/bin/env bash
# The straggler report end to end at RANKS ranks (default 2), window 10
# steps, 30 steps: with rank 1 sleeping 40 ms per step in forward, the
# master's INFO log names rank 1 (and no other) and its host, the timeline
# has every rank's counter and TensorBoard every rank's scalars; without the
# sleep, no report.
# Usage: straggler.sh LAUNCHER JOB WORK_DIR [RANKS]
set -u
launcher=$1; job=$2; work=$3; ranks=${4:-2}
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $1"; echo "--- output:"; echo "$output"; exit 1; }
run() {
  "$launcher" -n "$ranks" -x TNT_COMM_TIMEOUT=60 -x TNT_LOG_LEVEL=INFO -x TNT_STRAGGLER_WINDOW=10 "$@" 2>&1
}

output=$(run --timeline "$work/trace.json" -- "$job" 40 "$work/tb") || fail "the slow run failed"
grep -Eq "rank 1 \(host [^)]+\) is a straggler: its compute is [0-9.]+x the others' over the last 10 steps \([0-9.]+ ms vs [0-9.]+ ms; they wait [0-9.]+ ms per step for it\)" \
  <<<"$output" || fail "no straggler report naming rank 1"
[ "$(grep -c "is a straggler" <<<"$output")" -eq 1 ] || fail "the report came more than once"
for r in $(seq 0 $((ranks - 1))); do
  grep -Eq "\"name\":\"step times \(ms\)\",\"ph\":\"C\",\"ts\":[0-9]+,\"pid\":$r," "$work/trace.json" ||
    fail "the timeline has no step-times counter of rank $r"
  grep -aqr "straggler/compute_ms/rank_$r" "$work/tb/train" ||
    fail "TensorBoard has no straggler/compute_ms/rank_$r"
  grep -aqr "straggler/wait_ms/rank_$r" "$work/tb/train" ||
    fail "TensorBoard has no straggler/wait_ms/rank_$r"
done
grep -q "is a straggler" "$work/trace.json" || fail "the timeline does not mark the report"

output=$(run -- "$job" 0) || fail "the even run failed"
grep -q "is a straggler" <<<"$output" && fail "a report without a straggler"
echo "PASS"
