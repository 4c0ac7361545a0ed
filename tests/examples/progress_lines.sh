#!/usr/bin/env bash
# Usage: progress_lines.sh LAUNCHER LENET5
# fit() with its output going to a pipe (a batch job's log) prints one line
# per epoch, as Keras does, instead of a bar redrawn with carriage returns;
# with TNT_STDOUT_IS_TERMINAL=true (what the launcher exports when its own
# stdout is a terminal) the bar is redrawn in place.
set -u
launcher=$1; lenet5=$2
fail() { echo "FAIL: $*"; exit 1; }
args=(--epochs 3 --train-size 2048 --val-size 0 --test-size 512 --batch-size 64)

out=$("$launcher" -n 2 -- "$lenet5" "${args[@]}" | cat) || fail "the job failed"
echo "$out"
[ "$(tr -cd '\r' <<<"$out" | wc -c)" -eq 0 ] || fail "carriage returns in piped output"
for epoch in 1 2 3; do
  grep -qx "Epoch $epoch/3" <<<"$out" || fail "no 'Epoch $epoch/3' line"
done
bars=$(grep -cE '^32/32 \[=+\] - [0-9]+s [0-9]+ms/step - .*loss: ' <<<"$out")
[ "$bars" -eq 3 ] || fail "expected 3 final bar lines (one per epoch), got $bars"
partial=$(grep -cE '^ *[0-9]+/32 \[' <<<"$out")
[ "$partial" -eq 3 ] || fail "expected no bar lines besides the 3 final ones, got $partial"
echo "PASS: one line per epoch on a pipe"

live=$("$launcher" -n 2 -x TNT_STDOUT_IS_TERMINAL=true -- "$lenet5" "${args[@]}" | cat) \
  || fail "the job with TNT_STDOUT_IS_TERMINAL=true failed"
returns=$(tr -cd '\r' <<<"$live" | wc -c)
[ "$returns" -ge 3 ] || fail "expected the bar redrawn in place (carriage returns) on a terminal, got $returns"
echo "PASS: redrawn in place when told stdout is a terminal ($returns redraws)"
