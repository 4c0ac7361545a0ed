#!/usr/bin/env bash
# SIGTERM sent to the launcher alone stops every rank, and the programs'
# own children, within seconds.
source "$(dirname "$0")/lib.sh"

SLEEP=$(marked_sleep)
"$TARANTELLA" -n 3 --no-gpu -- sh -c "$SLEEP 60; true" >"$WORK/out" 2>"$WORK/err" </dev/null &
launcher=$!
if wait_for_count "^$SLEEP 60" 3 20; then pass "3 ranks running"; else fail "ranks did not start"; cat "$WORK/err"; finish; fi

start=$(date +%s%N)
kill -TERM "$launcher"
wait "$launcher"
STATUS=$?
if wait_for_count "$MARK" 0 10; then gone=1; else gone=0; fi
ELAPSED_MS=$(( ($(date +%s%N) - start) / 1000000 ))
echo "launcher and ranks gone after ${ELAPSED_MS} ms"
[ "$gone" -eq 1 ] && pass "no rank process left" || fail "left: $(ps -o pid,args -p "$(live_pids "$MARK" | paste -sd,)")"
expect_less "stopped within 10 s" "$ELAPSED_MS" 10000
expect_status "exit status 128+SIGTERM" 143
expect_contains "reason named" "$(cat "$WORK/err")" "job failed: stopped by signal 15"

finish
