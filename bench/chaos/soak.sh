#!/usr/bin/env bash
# The chaos soak: at least 50 faults at 2 ranks, one host, with
# tests/chaos/chaos.py; the short CI version is the ctest chaos.short.
#   bench/chaos/soak.sh [BUILD_DIR] [SEED] [EVENTS]
# EVENTS fault events (default 40: a "double" event is two faults, so about
# 50 faults land) over a LeNet-5 run long enough to hold them. Prints the
# driver's log; the result of the run recorded in docs/fault_tolerance.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
seed=${2:-2031}
events=${3:-40}
exec /usr/bin/python3 "$root/tests/chaos/chaos.py" --launcher "$build/bin/tarantella" \
  --lenet5 "$build/examples/lenet5/lenet5" --seed "$seed" --faults "$events" --epochs 60 \
  --train-size 3200 --backup-every 5 --max-delay 1.0
