#!/usr/bin/env bash
# Timeline, overlap log and fusion auto-tuning, end to end on LeNet-5 at
# 2 ranks:
#  1. TNT_TIMELINE writes a valid Chrome trace with allreduce slices that
#     overlap backward (check_timeline.py), and the per-epoch INFO line says
#     how much allreduce time was hidden;
#  2. TNT_AUTOTUNE tries overlap on/off and the candidate thresholds, logs
#     its choice and the trial CSV, and the trained weights are bitwise
#     equal to a run without it (2 ranks: a + b is exact whatever the
#     bucketing, and overlap only moves when an allreduce starts).
# Usage: timeline_autotune.sh PYTHON LAUNCHER LENET5 CHECK_TIMELINE WORKDIR
set -euo pipefail
python=$1 launcher=$2 lenet5=$3 check=$4 work=$5
rm -rf "$work"; mkdir -p "$work"
# 3072 / 64 = 48 optimizer steps: room for the tuner's 9 trials of 5 steps.
common=(--epochs 1 --train-size 3072 --val-size 0 --test-size 512 --verbose 0 --seed 3)

"$launcher" -n 2 -x TNT_TIMELINE="$work/trace.json" -x TNT_LOG_LEVEL=INFO -- \
  "$lenet5" "${common[@]}" --save-weights "$work/plain.pt" 2>&1 | tee "$work/plain.log"
"$python" "$check" "$work/trace.json" 2
grep -E "epoch 1: [0-9]+% of the allreduce time was hidden behind backward" "$work/plain.log"

"$launcher" -n 2 -x TNT_AUTOTUNE=true -x TNT_AUTOTUNE_LOG="$work/autotune.csv" \
  -x TNT_LOG_LEVEL=INFO -- "$lenet5" "${common[@]}" --save-weights "$work/tuned.pt" \
  2>&1 | tee "$work/tuned.log"
grep -E "autotune: fusion threshold .* chosen" "$work/tuned.log"
[ "$(grep -c ',1$' "$work/autotune.csv")" -eq 1 ] || { echo "FAIL: no single chosen row"; exit 1; }
# 2 trials of overlap at the default 32 KiB, then the 7 thresholds.
[ "$(wc -l < "$work/autotune.csv")" -eq 10 ] || { echo "FAIL: expected 9 trials"; cat "$work/autotune.csv"; exit 1; }
grep -q '^threshold_bytes,overlap,step_ms,chosen$' "$work/autotune.csv" || { echo "FAIL: CSV header"; exit 1; }
[ "$(grep -c 'autotune: trial [0-9]*: fusion threshold' "$work/tuned.log")" -eq 9 ] || { echo "FAIL: expected 9 trial lines"; exit 1; }
"$python" - "$work/plain.pt" "$work/tuned.pt" <<'PY'
import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
assert a.keys() == b.keys()
bad = [k for k in a if not torch.equal(a[k], b[k])]
assert not bad, f"auto-tuning changed the weights: {bad}"
print(f"weights bitwise equal with and without auto-tuning ({len(a)} tensors)")
PY
echo PASS
