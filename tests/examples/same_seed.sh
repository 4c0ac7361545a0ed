#!/usr/bin/env bash
# Reproducibility: LeNet-5 at 2 ranks, trained twice with the same
# --seed (tnt::set_seed), ends with bitwise equal weights; a different seed
# gives different weights (the seed really drives initialization/shuffling).
# Usage: same_seed.sh PYTHON LAUNCHER LENET5 WORKDIR
set -euo pipefail
python=$1 launcher=$2 lenet5=$3 work=$4
rm -rf "$work"; mkdir -p "$work"
run() {  # seed output
  "$launcher" -n 2 --no-gpu -- "$lenet5" --epochs 1 --train-size 2048 --val-size 0 \
    --test-size 256 --verbose 0 --seed "$1" --save-weights "$work/$2"
}
run 7 a.pt; run 7 b.pt; run 8 c.pt
"$python" - "$work" <<'PY'
import sys, torch
w = sys.argv[1]
a, b, c = (torch.load(f"{w}/{n}.pt") for n in "abc")
same = all(torch.equal(a[k], b[k]) for k in a)
differ = any(not torch.equal(a[k], c[k]) for k in a)
print(f"seed 7 twice: bitwise equal = {same}; seed 8 differs = {differ}")
assert same and differ
PY
echo PASS
