#!/usr/bin/env bash
# Exported values reach the ranks intact; only rank 0's stdout is shown,
# unless --output-on-all-devices, which prefixes each line with its rank.
# Standard error of every rank is always shown. Ranks learn whether the
# launcher's stdout is a terminal.
source "$(dirname "$0")/lib.sh"

run -n 2 --no-gpu -x "B=two words" -- sh -c 'echo "$B"; echo "err $OMPI_COMM_WORLD_RANK" >&2'
expect_status "job succeeds" 0
if [ "$OUT" = "two words" ]; then pass "exactly one line, from rank 0, value intact"
else fail "stdout was [$OUT], expected exactly [two words]"; fi
expect_contains "stderr of rank 0 shown" "$ERR" "err 0"
expect_contains "stderr of rank 1 shown" "$ERR" "err 1"

run -n 3 --no-gpu --output-on-all-devices -x "B=two words" -- \
  sh -c 'echo "$B"; printf "no newline from $OMPI_COMM_WORLD_RANK"'
expect_status "job succeeds" 0
for rank in 0 1 2; do
  expect_contains "rank $rank line prefixed" "$OUT" "[$rank] two words"
  expect_contains "rank $rank unterminated line kept" "$OUT" "[$rank] no newline from $rank"
done
lines=$(grep -c . <<<"$OUT")
if [ "$lines" -eq 6 ]; then pass "six lines"; else fail "expected 6 lines, got $lines"; echo "$OUT"; fi
unprefixed=$(grep -vc '^\[[0-2]\] ' <<<"$OUT")
if [ "$unprefixed" -eq 0 ]; then pass "every line prefixed"; else fail "$unprefixed lines without prefix"; fi

run -n 2 --no-gpu --log-level debug --log-on-all-devices --fusion-threshold 0 -- \
  sh -c 'echo "$TNT_LOG_LEVEL $TNT_LOG_ON_ALL_DEVICES $TNT_OUTPUT_ON_ALL_DEVICES $TNT_FUSION_THRESHOLD $TNT_USE_GPU"'
expect_contains "TNT_* variables reach the ranks" "$OUT" "DEBUG true false 0 false"

# TNT_STDOUT_IS_TERMINAL tells every rank whether the launcher's stdout is a
# terminal (their own stdout is a pipe under mpirun); -x overrides it.
SHOW_TERM='echo "$OMPI_COMM_WORLD_RANK term=$TNT_STDOUT_IS_TERMINAL"'
piped=$("$TARANTELLA" -n 2 --no-gpu --output-on-all-devices -- sh -c "$SHOW_TERM" </dev/null | cat)
expect_contains "stdout a pipe: rank 0 sees false" "$piped" "[0] 0 term=false"
expect_contains "stdout a pipe: rank 1 sees false" "$piped" "[1] 1 term=false"
forced=$("$TARANTELLA" -n 1 --no-gpu -x TNT_STDOUT_IS_TERMINAL=true -- sh -c "$SHOW_TERM" </dev/null | cat)
expect_contains "-x TNT_STDOUT_IS_TERMINAL wins" "$forced" "0 term=true"
if command -v script >/dev/null; then
  tty_out=$(script -qec "$(printf '%q ' "$TARANTELLA" -n 2 --no-gpu --output-on-all-devices \
    -- sh -c "$SHOW_TERM")" /dev/null </dev/null | tr -d '\r')
  expect_contains "stdout a terminal: rank 0 sees true" "$tty_out" "[0] 0 term=true"
  expect_contains "stdout a terminal: rank 1 sees true" "$tty_out" "[1] 1 term=true"
else
  echo "SKIP: stdout a terminal: 'script' (bsdutils/util-linux) is not installed"
fi


# Every rank's stdout through a pipe (--output-on-all-devices, or
# -x TNT_OUTPUT_ON_ALL_DEVICES=true, the manual's variable): Python writes
# each line through (PYTHONUNBUFFERED=1, unless the user set it), so lines
# are not held in a block buffer and lost with a rank that dies.
unbuffered=$(env -u PYTHONUNBUFFERED "$TARANTELLA" -n 2 --no-gpu -x TNT_OUTPUT_ON_ALL_DEVICES=true \
  -- sh -c 'echo "unbuffered=${PYTHONUNBUFFERED-unset}"' </dev/null)
expect_contains "all ranks' output: rank 0 unbuffered" "$unbuffered" "[0] unbuffered=1"
expect_contains "all ranks' output: rank 1 unbuffered" "$unbuffered" "[1] unbuffered=1"
kept=$(PYTHONUNBUFFERED= "$TARANTELLA" -n 1 --no-gpu --output-on-all-devices \
  -- sh -c 'echo "unbuffered=${PYTHONUNBUFFERED-unset}."' </dev/null)
expect_contains "the user's PYTHONUNBUFFERED stays" "$kept" "[0] unbuffered=."

finish
