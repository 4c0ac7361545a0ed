#!/usr/bin/env bash
# The training modes (deterministic, mixed precision) side by side:
# throughput of LeNet-5 and the
# MLP (784-4096-4096-10), global batch 256, in normal mode against
# deterministic mode with chunks of 32 and of 8 samples
# (CompileOptions().deterministic(chunk)) and against bfloat16 mixed
# precision, at 1 and 2 ranks, all in one run, interleaved over rounds (the
# median of each is reported). Prints one markdown table.
#
#   bench/train_step/modes.sh [--high-priority] [--rounds 3]
#
# Builds nothing: cmake --build build --target tnt_launcher bench_train_step.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
bench=$build/bench/train_step/bench_train_step
launcher=$build/bin/tarantella
for f in "$bench" "$launcher"; do
  [ -x "$f" ] || { echo "modes.sh: $f is missing: cmake --build $build --target tnt_launcher bench_train_step" >&2; exit 2; }
done
if [ "${1:-}" = "--high-priority" ]; then
  shift
  echo -19 > /proc/self/autogroup
fi
rounds=3
[ "${1:-}" = "--rounds" ] && rounds=$2
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$rounds"); do
  for model in lenet mlp; do
    for n in 1 2; do
      for mode in 0 32 8 bfloat16; do
        if [ "$mode" = bfloat16 ]; then flags=(--precision bfloat16); else flags=(--deterministic "$mode"); fi
        "$launcher" -n "$n" --no-gpu -- "$bench" --variant tnt --model "$model" --batch-size 256 \
          --steps 10 --epochs 3 "${flags[@]}" | sed -n 's/^RESULT //p' >>"$results"
      done
    done
  done
  echo "round $round of $rounds done" >&2
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
def median(model, n, chunk, precision="float32"):
    v = [r["samples_per_s"] for r in rows
         if r["model"] == model and r["ranks"] == n and r["deterministic"] == chunk
         and r["precision"] == precision]
    return statistics.median(v)
print("| model | ranks | normal (samples/s) | deterministic(32) | ratio | deterministic(8) | ratio | bfloat16 | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for model in ("lenet", "mlp"):
    for n in (1, 2):
        base = median(model, n, 0)
        d32, d8, bf = median(model, n, 32), median(model, n, 8), median(model, n, 0, "bfloat16")
        print(f"| {model} | {n} | {base:.0f} | {d32:.0f} | {d32 / base:.2f}x | {d8:.0f} | {d8 / base:.2f}x "
              f"| {bf:.0f} | {bf / base:.2f}x |")
PY
