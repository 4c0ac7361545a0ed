#!/usr/bin/env bash
# Ctrl+C at a real terminal (a pty from `script`) stops every rank. The
# kernel sends SIGINT to the launcher and mpirun alike; the launcher must not
# signal mpirun a second time, and everything must be gone within seconds.
source "$(dirname "$0")/lib.sh"

if ! command -v script >/dev/null; then echo "script(1) missing: install bsdutils"; exit 1; fi
SLEEP=$(marked_sleep)
command="$TARANTELLA -n 3 --no-gpu -- sh -c '$SLEEP 60; true'"
{
  if wait_for_count "^$SLEEP 60" 3 20; then echo started >"$WORK/started"; fi
  date +%s%N >"$WORK/start"
  printf '\003'
  # Keep the terminal's input open until the job is gone.
  wait_for_count "$MARK" 0 15
} | script -qfec "$command" /dev/null >"$WORK/out" 2>&1
STATUS=$?
end=$(date +%s%N)
[ -f "$WORK/started" ] && pass "3 ranks running" || fail "ranks did not start"
if wait_for_count "$MARK" 0 1; then pass "no rank process left"; else fail "left: $(live_pids "$MARK")"; fi
ELAPSED_MS=$(( (end - $(cat "$WORK/start")) / 1000000 ))
echo "stopped ${ELAPSED_MS} ms after Ctrl+C"
expect_less "stopped within 10 s" "$ELAPSED_MS" 10000
expect_status "exit status 128+SIGINT" 130
expect_contains "reason named" "$(cat "$WORK/out")" "job failed: stopped by signal 2"

finish
