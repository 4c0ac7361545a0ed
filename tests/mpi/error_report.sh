#!/usr/bin/env bash
# A library error on a rank ends the job with exit status 1 and one clear
# message: shown exactly once, naming the rank that failed, without
# backtraces (unless the log level is DEBUG), std::terminate's text, signal 6
# or OpenMPI's banners; whether the program leaves the error uncaught or its
# main catches it. Also for an error raised on every rank (LeNet-5 with
# --init-weights naming a missing file), when the example's path is given.
# Usage: error_report.sh TARANTELLA SCENARIOS [LENET5]
source "$(dirname "$0")/../launcher/lib.sh"

SCENARIOS=$(realpath "$2")
LENET5=${3:-}
HOST=$(hostname)
# A long timeout: the ranks that wait must be stopped by the launcher, not
# fail on their own.
TIMEOUT=(-x TNT_COMM_TIMEOUT=60)

# expect_once NAME TEXT NEEDLE: NEEDLE occurs exactly once in TEXT.
expect_once() {
  local count
  count=$(grep -cF -- "$3" <<<"$2")
  if [ "$count" -eq 1 ]; then pass "$1"; else fail "$1: '$3' appears $count times"; show_output; fi
}

# expect_clean NAME: no trace of an abort, a backtrace or an OpenMPI banner.
expect_clean() {
  for noise in "signal 6" "Aborted" "terminate called" "MPI_ABORT" "Process received signal" \
      "--------------------" "Primary job" "mpirun detected" "backtrace" "frame #"; do
    expect_not_contains "$1: no '$noise'" "$ERR" "$noise"
  done
}

MISSING="Fashion-MNIST file train-images-idx3-ubyte[.gz] not found in /nonexistent/tnt-data"

run -n 4 --no-gpu "${TIMEOUT[@]}" -- "$SCENARIOS" library-error
echo "uncaught library error: ${ELAPSED_MS} ms"
expect_status "uncaught: exit status 1" 1
expect_less "uncaught: ends within 10 s" "$ELAPSED_MS" 10000
expect_once "uncaught: the message once" "$ERR" "$MISSING"
expect_contains "uncaught: the failing rank and host named" "$ERR" \
  "tarantella: rank 2 on host $HOST failed: $MISSING"
expect_clean "uncaught"
if wait_for_count "$SCENARIOS library-error" 0 5; then pass "uncaught: no rank left"; else fail "uncaught: ranks left"; fi

run -n 4 --no-gpu --log-level debug "${TIMEOUT[@]}" -- "$SCENARIOS" library-error
expect_status "uncaught, DEBUG: exit status 1" 1
expect_once "uncaught, DEBUG: the message once" "$ERR" "$MISSING"
expect_contains "uncaught, DEBUG: a backtrace" "$ERR" "backtrace of rank 2"
expect_contains "uncaught, DEBUG: it shows where the error was raised" "$ERR" \
  "tnt::data::datasets::fashion_mnist"

# The user's main catches the error on rank 2, prints it and returns 1
# while the other ranks wait in a collective.
run -n 4 --no-gpu "${TIMEOUT[@]}" -- "$SCENARIOS" library-error-caught
echo "caught library error: ${ELAPSED_MS} ms"
expect_status "caught: exit status 1" 1
expect_less "caught: ends within 10 s" "$ELAPSED_MS" 10000
expect_once "caught: the message once" "$ERR" "$MISSING"
expect_contains "caught: rank 2 named" "$ERR" "rank 2"
expect_clean "caught"
if wait_for_count "$SCENARIOS library-error" 0 5; then pass "caught: no rank left"; else fail "caught: ranks left"; fi

if [ -n "$LENET5" ]; then
  # Every rank fails here: the master cannot read the file, and the others
  # learn it from the master. The message is still shown once.
  run -n 4 --no-gpu -- "$LENET5" --init-weights "$WORK/missing.pt" --epochs 1
  expect_status "LeNet-5, missing weights: exit status 1" 1
  expect_once "LeNet-5, missing weights: the message once" "$ERR" "cannot open '$WORK/missing.pt'"
  if grep -qE "^tarantella: rank [0-3] on host $HOST failed: .*cannot open '$WORK/missing.pt'" <<<"$ERR"; then
    pass "LeNet-5, missing weights: a failing rank named with the message"
  else
    fail "LeNet-5, missing weights: no 'tarantella: rank R on host $HOST failed: ...' line"
    show_output
  fi
  expect_clean "LeNet-5, missing weights"
else
  echo "SKIP: LeNet-5: no path to the example given"
fi

finish
