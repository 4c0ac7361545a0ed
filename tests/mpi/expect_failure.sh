#!/usr/bin/env bash
# Runs a command that must fail: asserts a non-zero exit status, an elapsed
# time under MAX_SECONDS, and output (stdout+stderr) matching REGEX.
# Usage: expect_failure.sh MAX_SECONDS REGEX -- command [args...]
set -u
max=$1; regex=$2; shift 3
start=$(date +%s%N)
output=$("$@" 2>&1); status=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
fail() { echo "FAIL: $1"; echo "--- output:"; echo "$output"; exit 1; }
[ "$status" -ne 0 ] || fail "expected a non-zero exit status, got 0"
[ "$elapsed_ms" -lt $(( max * 1000 )) ] || fail "took ${elapsed_ms} ms, more than ${max} s"
grep -Eq -- "$regex" <<<"$output" || fail "output does not match /$regex/"
echo "PASS: exit status $status after ${elapsed_ms} ms, output matches /$regex/"
