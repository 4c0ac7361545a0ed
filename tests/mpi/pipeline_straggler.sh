#!/usr/bin/env bash
# The straggler report with pipeline stages, end to end at 4 ranks (2 stages
# x 2 replicas) at the default settings (tests/mpi/pipeline_straggler_job.cpp).
# An uneven but healthy pipeline (stage 1 twice stage 0's work) is
# reported as nothing; with rank 3 slowed, the master (rank 0, a stage-0
# rank) warns once, naming rank 3 by its rank in the job with its stage,
# against the other replicas of its stage, with compute the largest part.
# Usage: pipeline_straggler.sh LAUNCHER JOB
set -u
launcher=$1; job=$2
unset TNT_LOG_LEVEL TNT_STRAGGLER_WINDOW TNT_TIMELINE
fail() { echo "FAIL: $1"; echo "--- output:"; echo "$output"; exit 1; }

start=$(date +%s)
output=$("$launcher" -n 4 --no-gpu -x TNT_COMM_TIMEOUT=60 -- "$job" 50 2>&1) || fail "the job failed"

section() {
  awk -v fit="pipeline_straggler_job: fit $1" -v end="pipeline_straggler_job: end $1" \
    'index($0, end) { on = 0 } on { print } index($0, fit) { on = 1 }' <<<"$output"
}
report='WARNING: rank 3 \(host [^)]+, stage 1 of 2\) is a straggler: [0-9.]+ ms per step outside collectives against [0-9.]+ ms for the other replicas of stage 1 of 2 \(data [0-9.]+, compute [0-9.]+, callbacks and other [0-9.]+ ms\); the others wait [0-9.]+ ms per step for it \(last [0-9]+ steps\)'

for fit in uneven slowed; do
  grep -q "pipeline_straggler_job: end $fit" <<<"$output" || fail "fit '$fit' did not finish"
done
section uneven | grep -q "straggler" && fail "a report in a healthy, uneven pipeline (fit 'uneven')"
lines=$(section slowed | grep "straggler")
[ "$(grep -c . <<<"$lines")" -eq 1 ] || fail "fit 'slowed': not exactly one report: $lines"
grep -Eq "$report" <<<"$lines" || fail "fit 'slowed': the report does not name rank 3 (stage 1 of 2) alone"
largest=$(sed -E 's/.*\(data ([0-9.]+), compute ([0-9.]+), callbacks and other ([0-9.]+) ms\).*/\1 data\n\2 compute\n\3 other/' \
  <<<"$lines" | sort -g | tail -1 | cut -d' ' -f2)
[ "$largest" = compute ] || fail "fit 'slowed': the breakdown's largest part is not compute: $lines"
echo "$lines"
echo "PASS ($(($(date +%s) - start)) s)"
