#!/usr/bin/env bash
# The straggler report end to end at RANKS ranks (default 2), at the default
# settings (no TNT_LOG_LEVEL, no TNT_STRAGGLER_WINDOW): one job runs four
# short fits (tests/mpi/straggler_job.cpp). Without a sleep nothing is
# reported; with rank 1 sleeping 100 ms per step (besides every rank's 40 ms
# in forward) in forward, in a map of the input pipeline or in a callback,
# the master warns once, naming rank 1 (and no other) and its host, with the
# breakdown whose largest part is the one that sleeps (compute, data,
# callbacks and other). The last fit's timeline
# has every rank's counter and TensorBoard every rank's scalars.
# Usage: straggler.sh LAUNCHER JOB WORK_DIR [RANKS]
set -u
launcher=$1; job=$2; work=$3; ranks=${4:-2}
rm -rf "$work" && mkdir -p "$work"
unset TNT_LOG_LEVEL TNT_STRAGGLER_WINDOW TNT_TIMELINE
fail() { echo "FAIL: $1"; echo "--- output:"; echo "$output"; exit 1; }

output=$("$launcher" -n "$ranks" -x TNT_COMM_TIMEOUT=60 --timeline "$work/trace.json" -- \
  "$job" 100 "$work/tb" 2>&1) || fail "the job failed"

# The master's lines between "straggler_job: fit NAME" and "... end NAME".
section() {
  awk -v fit="straggler_job: fit $1" -v end="straggler_job: end $1" \
    'index($0, end) { on = 0 } on { print } index($0, fit) { on = 1 }' <<<"$output"
}
report='WARNING: rank 1 \(host [^)]+\) is a straggler: [0-9.]+ ms per step outside collectives against [0-9.]+ ms for the others \(data [0-9.]+, compute [0-9.]+, callbacks and other [0-9.]+ ms\); the others wait [0-9.]+ ms per step for it \(last [0-9]+ steps\)'

for fit in even forward data callback; do
  grep -q "straggler_job: end $fit" <<<"$output" || fail "fit '$fit' did not finish"
done
section even | grep -q "straggler" && fail "a report without a straggler (fit 'even')"
for fit in forward data callback; do
  lines=$(section "$fit" | grep "straggler")
  [ "$(grep -c . <<<"$lines")" -eq 1 ] || fail "fit '$fit': not exactly one report: $lines"
  grep -Eq "$report" <<<"$lines" || fail "fit '$fit': the report does not name rank 1 alone"
  # The largest part of the breakdown is where rank 1 sleeps.
  largest=$(sed -E 's/.*\(data ([0-9.]+), compute ([0-9.]+), callbacks and other ([0-9.]+) ms\).*/\1 data\n\2 forward\n\3 callback/' \
    <<<"$lines" | sort -g | tail -1 | cut -d' ' -f2)
  [ "$largest" = "$fit" ] || fail "fit '$fit': the breakdown's largest part is not $fit: $lines"
done

for r in $(seq 0 $((ranks - 1))); do
  grep -Eq "\"name\":\"step times \(ms\)\",\"ph\":\"C\",\"ts\":[0-9]+,\"pid\":$r,\"args\":\{\"compute\":[-0-9.e]+,\"data\":[-0-9.e]+,\"other\":[-0-9.e]+,\"wait\":[-0-9.e]+\}" \
    "$work/trace.json" || fail "the timeline has no step-times counter of rank $r"
  for part in data compute other wait; do
    grep -aqr "straggler/${part}_ms/rank_$r" "$work/tb/train" ||
      fail "TensorBoard has no straggler/${part}_ms/rank_$r"
  done
done
grep -q "is a straggler" "$work/trace.json" || fail "the timeline does not mark the report"
echo "PASS"
