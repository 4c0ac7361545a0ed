#!/usr/bin/env bash
# --version and --help.
source "$(dirname "$0")/lib.sh"

run --version
expect_status "--version exits 0" 0
if [[ "$OUT" =~ ^tarantella\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then pass "version line: $OUT"; else fail "version line [$OUT]"; fi

run --help
expect_status "--help exits 0" 0
expect_contains "usage line" "$OUT" "Usage: tarantella [OPTIONS] -- PROGRAM [ARGS...]"
expect_contains "documents --hostfile" "$OUT" "--hostfile"

finish
