#!/usr/bin/env bash
# The optimizer variants (per-bucket steps, ZeRO-1 sharding) side by side:
# the MLP 784-4096-4096-10
# (20.0 M parameters) with Adam, global batch 256, at 1, 2 and 4 ranks,
# interleaved over rounds (medians reported):
#   whole step   TNT_OVERLAP_OPTIMIZER=false (the default): one optimizer
#                step after every bucket has arrived;
#   per bucket   TNT_OVERLAP_OPTIMIZER=true: each bucket's parameters stepped
#                as soon as the bucket is reduced, while later buckets are on
#                the wire;
#   sharded      CompileOptions().shard_optimizer(true) (ZeRO stage 1).
# Per row: the largest rank's optimizer state (counted from torch::optim's
# state tensors) and peak resident memory (VmHWM), and the throughput.
# Prints one markdown table.
#
#   bench/train_step/shard.sh [--high-priority] [--rounds 3] [--ranks "1 2 4"]
#
# Builds nothing: cmake --build build --target tnt_launcher bench_train_step.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
bench=$build/bench/train_step/bench_train_step
launcher=$build/bin/tarantella
for f in "$bench" "$launcher"; do
  [ -x "$f" ] || { echo "shard.sh: $f is missing: cmake --build $build --target tnt_launcher bench_train_step" >&2; exit 2; }
done
rounds=3
ranks="1 2 4"
while [ $# -gt 0 ]; do
  case $1 in
    --high-priority) echo -19 > /proc/self/autogroup ;;
    --rounds) rounds=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    *) echo "shard.sh: unknown argument '$1' (--high-priority, --rounds N, --ranks \"1 2 4\")" >&2; exit 2 ;;
  esac
  shift
done
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
  for n in $ranks; do
    for v in whole per_bucket sharded; do
      overlap=true; shard=""
      [ "$v" = whole ] && overlap=false
      [ "$v" = sharded ] && shard=--shard
      "$launcher" -n "$n" --no-gpu -x TNT_OVERLAP_OPTIMIZER=$overlap -- "$bench" --variant tnt \
        --model mlp --optimizer adam --learning-rate 0.001 --batch-size 256 --steps 10 --epochs 3 \
        $shard | sed -n "s/^RESULT {/{\"v\": \"$v\", /p" >>"$results"
    done
  done
  echo "round $round of $rounds done" >&2
done
python3 - "$results" "$ranks" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
ranks = [int(n) for n in sys.argv[2].split()]
def pick(n, v, key):
    return statistics.median(r[key] for r in rows if r["ranks"] == n and r["v"] == v)
mib = 1 << 20
print("| ranks | Adam state per rank, unsharded (MiB) | sharded (MiB) | ratio | peak RSS unsharded / sharded (MiB) | samples/s whole step | per bucket | sharded | per bucket / whole | sharded / per bucket |")
print("|---|---|---|---|---|---|---|---|---|---|")
for n in ranks:
    su, ss = pick(n, "per_bucket", "optimizer_state_bytes"), pick(n, "sharded", "optimizer_state_bytes")
    ru, rs = pick(n, "per_bucket", "peak_rss_bytes"), pick(n, "sharded", "peak_rss_bytes")
    tw, tu, ts = (pick(n, v, "samples_per_s") for v in ("whole", "per_bucket", "sharded"))
    print(f"| {n} | {su / mib:.1f} | {ss / mib:.1f} | 1/{su / ss:.2f} | {ru / mib:.0f} / {rs / mib:.0f} "
          f"| {tw:.0f} | {tu:.0f} | {ts:.0f} | {tu / tw:.2f}x | {ts / tu:.2f}x |")
PY
