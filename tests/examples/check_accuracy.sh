#!/usr/bin/env bash
# Usage: check_accuracy.sh MIN command... ; runs the command, finds
# "test accuracy: X" in its output and checks X >= MIN.
set -u
min=$1; shift
output=$("$@" 2>&1); status=$?
echo "$output" | tail -5
[ "$status" -eq 0 ] || { echo "FAIL: exit status $status"; exit 1; }
acc=$(grep -oE "test accuracy: [0-9.]+" <<<"$output" | awk '{print $3}' | tail -1)
[ -n "$acc" ] || { echo "FAIL: no 'test accuracy:' in the output"; exit 1; }
awk -v a="$acc" -v m="$min" 'BEGIN { exit !(a >= m) }' || { echo "FAIL: test accuracy $acc < $min"; exit 1; }
echo "PASS: test accuracy $acc >= $min"
