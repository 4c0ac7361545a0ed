#!/usr/bin/env bash
# Runs a command that must fail: asserts a non-zero exit status, an elapsed
# time under MAX_SECONDS, and output (stdout+stderr) matching REGEX. The
# time counts from the mark the program writes to $TNT_TEST_MARK just before
# a rank fails (mpi_scenarios' culprit does), else from the launch.
# Usage: expect_failure.sh MAX_SECONDS REGEX -- command [args...]
set -u
max=$1; regex=$2; shift 3
TNT_TEST_MARK=$(mktemp "${TMPDIR:-/tmp}/tnt-mark.XXXXXX"); export TNT_TEST_MARK
trap 'rm -f "$TNT_TEST_MARK"' EXIT
start=$(date +%s%N)
output=$("$@" 2>&1); status=$?
end=$(date +%s%N)
[ -s "$TNT_TEST_MARK" ] && start=$(cat "$TNT_TEST_MARK")
elapsed_ms=$(( (end - start) / 1000000 ))
fail() { echo "FAIL: $1"; echo "--- output:"; echo "$output"; exit 1; }
[ "$status" -ne 0 ] || fail "expected a non-zero exit status, got 0"
[ "$elapsed_ms" -lt $(( max * 1000 )) ] || fail "took ${elapsed_ms} ms, more than ${max} s"
grep -Eq -- "$regex" <<<"$output" || fail "output does not match /$regex/"
echo "PASS: exit status $status after ${elapsed_ms} ms, output matches /$regex/"
