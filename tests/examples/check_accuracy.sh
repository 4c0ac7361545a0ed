#!/usr/bin/env bash
# Usage: check_accuracy.sh [--label TEXT] MIN command...
# Runs the command, finds its last "TEXT: X" line (TEXT defaults to
# "test accuracy") and checks X >= MIN. Used for the examples' end-to-end
# tests (LeNet-5 accuracy, the Transformer's "final exact match").
set -u
label="test accuracy"
if [ "${1:-}" = "--label" ]; then label=$2; shift 2; fi
min=$1; shift
output=$("$@" 2>&1); status=$?
echo "$output" | tail -12
[ "$status" -eq 0 ] || { echo "FAIL: exit status $status"; exit 1; }
value=$(grep -oE "$label: [0-9.]+" <<<"$output" | awk '{print $NF}' | tail -1)
[ -n "$value" ] || { echo "FAIL: no '$label:' in the output"; exit 1; }
awk -v a="$value" -v m="$min" 'BEGIN { exit !(a >= m) }' || { echo "FAIL: $label $value < $min"; exit 1; }
echo "PASS: $label $value >= $min"
