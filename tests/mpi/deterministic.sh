#!/usr/bin/env bash
# Deterministic mode: LeNet-5 and a BatchNorm+Dropout network, 2 epochs,
# shuffled, last batch short, trained without MPI and at 1, 2 and 4 ranks:
# weights, buffers, losses and metrics must be byte for byte the same.
# The normal mode at 1 and 2 ranks is run for comparison (reported only).
# On the CPU whatever the machine has (TNT_USE_GPU=false, --no-gpu): byte
# for byte across rank counts needs one device for all runs, and a machine
# with fewer GPUs than ranks would put 1 rank on a GPU and 2 on the CPU.
#   deterministic.sh LAUNCHER JOB
set -u
launcher=$1 job=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tnt-deterministic.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
TNT_USE_GPU=false "$job" "$work/serial" --no-runtime || fail "the run without MPI failed"
for n in 1 2 4; do
  "$launcher" -n "$n" --no-gpu -- "$job" "$work/n$n" || fail "the run at $n ranks failed"
done
grep -a " history \| evaluate " "$work/serial"
for n in 1 2 4; do
  cmp "$work/serial" "$work/n$n" || fail "deterministic mode at $n ranks differs from the run without MPI"
  echo "deterministic mode at $n ranks: byte for byte equal to the run without MPI"
done
"$launcher" -n 1 --no-gpu -- "$job" "$work/normal1" --normal || fail "normal mode at 1 rank failed"
"$launcher" -n 2 --no-gpu -- "$job" "$work/normal2" --normal || fail "normal mode at 2 ranks failed"
if cmp -s "$work/normal1" "$work/normal2"; then
  echo "(normal mode at 1 and 2 ranks happens to be equal too)"
else
  echo "(normal mode at 1 and 2 ranks differs, as float sums in another order do)"
fi
echo PASS
