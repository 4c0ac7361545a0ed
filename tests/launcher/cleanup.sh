#!/usr/bin/env bash
# --cleanup stops this user's processes of exactly the named program: a copy
# of sleep at a unique path is stopped, a plain sleep started at the same
# time is left alone.
source "$(dirname "$0")/lib.sh"

SLEEP=$(marked_sleep)
sleep 60 &
bystander=$!

start_leftover() {
  "$SLEEP" 60 &
  LEFTOVER=$!
  wait_for_count "^$SLEEP 60" 1 5 || fail "leftover did not start"
}

# cleanup_case NAME SIGNAL EXIT-STATUS FLAGS...: one leftover, one cleanup.
cleanup_case() {
  local name=$1 signal=$2 want=$3
  shift 3
  start_leftover
  run --cleanup "$@" -- "$SLEEP"
  expect_status "$name: exits 0" 0
  expect_contains "$name: count for the host" "$OUT" \
    "signalled 1 process(es) of $SLEEP with $signal (pids $LEFTOVER)"
  wait "$LEFTOVER" 2>/dev/null
  local status=$?
  [ "$status" -eq "$want" ] && pass "$name: leftover got $signal" || fail "$name: leftover status $status"
  kill -0 "$bystander" 2>/dev/null && pass "$name: plain sleep untouched" || fail "$name: plain sleep was killed"
}

start_leftover
run --cleanup --dry-run -- "$SLEEP"
expect_status "dry run exits 0" 0
expect_contains "dry run lists the leftover" "$OUT" \
  "would signal 1 process(es) of $SLEEP with SIGTERM (pids $LEFTOVER)"
kill -0 "$LEFTOVER" 2>/dev/null && pass "dry run signals nothing" || fail "dry run killed the leftover"
kill "$LEFTOVER"
wait "$LEFTOVER" 2>/dev/null

cleanup_case "this node" SIGTERM 143
# With a hostfile the cleanup runs through mpirun, once per host.
echo localhost >"$WORK/hosts"
cleanup_case "hostfile, --force" SIGKILL 137 --force --hostfile "$WORK/hosts"

run --cleanup -- "$SLEEP"
expect_contains "nothing left: zero signalled" "$OUT" "signalled 0 process(es)"

kill "$bystander"
finish
