#!/usr/bin/env bash
# --max-restarts: a failed job is started again (TNT_RESTART_COUNT tells the
# ranks which attempt they are in), at most K times, never after the user
# stopped it; with a hostfile, hosts a fake remote agent cannot reach are left
# out down to --min-ranks.
source "$(dirname "$0")/lib.sh"

cd "$WORK" || exit 1

# Each rank appends "attempt N rank R"; rank 1 kills itself in the first attempt.
LOG="$WORK/attempts-$MARK"
KILL_FIRST="echo \"attempt \$TNT_RESTART_COUNT rank \$OMPI_COMM_WORLD_RANK\" >>$LOG
if [ \"\$TNT_RESTART_COUNT\" = 0 ] && [ \"\$OMPI_COMM_WORLD_RANK\" = 1 ]; then kill -9 \$\$; fi"
attempts() { sort "$LOG" 2>/dev/null | paste -sd,; }

run -n 2 --no-gpu --max-restarts 1 -- sh -c "$KILL_FIRST"
expect_status "fails once, then succeeds: exit status 0" 0
expect_contains "the failure is named" "$ERR" "tarantella: rank 1 on host"
expect_contains "one restart line with the reason" "$ERR" \
  "tarantella: job failed: mpirun exited with code 137 (rank 1 failed first, see above); restarting (restart 1 of 1)"
if [ "$(attempts)" = "attempt 0 rank 0,attempt 0 rank 1,attempt 1 rank 0,attempt 1 rank 1" ]; then
  pass "both ranks ran twice, with TNT_RESTART_COUNT 0 then 1"
else
  fail "attempts: $(attempts)"
fi

rm -f "$LOG"
run -n 2 --no-gpu -- sh -c "$KILL_FIRST"
expect_status "without --max-restarts the failure ends the job" 137
expect_contains "the usual summary" "$ERR" "tarantella: job failed: mpirun exited with code 137 (rank 1 failed first, see above)"
expect_not_contains "no restart" "$ERR" "restarting"
rm -f "$LOG"
run -n 2 --no-gpu --max-restarts 0 -- sh -c "$KILL_FIRST"
expect_status "--max-restarts 0 is the same" 137
[ "$(attempts)" = "attempt 0 rank 0,attempt 0 rank 1" ] && pass "ran once" || fail "attempts: $(attempts)"

# A program that always fails runs K+1 times and the last failure's code is returned.
rm -f "$LOG"
run -n 2 --no-gpu --max-restarts 2 -- sh -c "$KILL_FIRST; exit 3"
echo "three failing attempts took ${ELAPSED_MS} ms"
expect_status "always failing: the last attempt's exit code" 3
[ "$(grep -c 'rank 0$' "$LOG")" -eq 3 ] && pass "ran exactly 3 times" || fail "attempts: $(attempts)"
[ "$(grep -c 'restarting (restart' <<<"$ERR")" -eq 2 ] && pass "2 restart lines" || fail "restart lines"
expect_contains "second restart" "$ERR" "restarting (restart 2 of 2)"
expect_contains "final summary names the last failure" "$ERR" "exited with code 3 (rank"
expect_contains "final summary says it gave up" "$ERR" "giving up after 2 restarts"
expect_less "three attempts within 60 s" "$ELAPSED_MS" 60000

# SIGTERM to the launcher during an attempt stops the job for good.
rm -f "$LOG"
SLEEP=$(marked_sleep)
"$TARANTELLA" -n 2 --no-gpu --max-restarts 3 -- sh -c "echo \"attempt \$TNT_RESTART_COUNT\" >>$LOG; $SLEEP 60; true" \
  >"$WORK/out" 2>"$WORK/err" </dev/null &
launcher=$!
if wait_for_count "^$SLEEP 60" 2 20; then pass "2 ranks running"; else fail "ranks did not start"; cat "$WORK/err"; fi
kill -TERM "$launcher"
wait "$launcher"
STATUS=$?
ERR=$(cat "$WORK/err")
expect_status "SIGTERM: exit status 143" 143
expect_contains "SIGTERM: reason named" "$ERR" "tarantella: job failed: stopped by signal 15"
expect_not_contains "SIGTERM: no restart" "$ERR" "restarting"
if wait_for_count "$MARK" 0 10; then pass "no rank left running"; else fail "ranks left: $(live_pids "$MARK")"; fi
[ "$(attempts)" = "attempt 0,attempt 0" ] && pass "SIGTERM: no second attempt" || fail "attempts: $(attempts)"

# A hostfile with this node and a host that a fake remote agent (standing in
# for ssh) cannot reach: mpirun fails to start its daemon there, the probe
# before the restart finds the host down, and the restart runs without it.
printf '#!/bin/sh\necho "fake agent: no route to $1" >&2\nexit 255\n' >agent && chmod +x agent
printf 'localhost\ndeadhost\n' >hosts
SHOW_SIZE='echo "size $OMPI_COMM_WORLD_SIZE attempt $TNT_RESTART_COUNT"'
run --hostfile hosts --npernode 1 --no-gpu --mca plm_rsh_agent "$WORK/agent" \
  --max-restarts 1 --min-ranks 1 -- sh -c "$SHOW_SIZE"
expect_status "unreachable host left out: exit status 0" 0
expect_contains "the first attempt failed and is restarted" "$ERR" "; restarting (restart 1 of 1)"
expect_contains "the host is left out with the agent's answer" "$ERR" \
  "tarantella: host deadhost cannot be reached ($WORK/agent exited with code 255: fake agent: no route to deadhost): leaving it out; 1 host, 1 rank remain"
expect_contains "the restart runs on the remaining host" "$OUT" "size 1 attempt 1"

run --hostfile hosts --npernode 1 --no-gpu --mca plm_rsh_agent "$WORK/agent" \
  --max-restarts 1 -- sh -c "$SHOW_SIZE"
expect_status "without --min-ranks: the first attempt's exit code" 255
expect_contains "without --min-ranks: every host must take part" "$ERR" \
  "tarantella: error: cannot restart: 1 of 2 hosts cannot be reached, and without --min-ranks every host must take part: give --min-ranks 1"
expect_not_contains "without --min-ranks: no second attempt" "$OUT" "attempt 1"

# --dry-run shows the settings.
run --dry-run -n 2 --no-gpu --max-restarts 2 -- /bin/true
expect_contains "dry run: restart note" "$OUT" "# on failure: up to 2 restart(s) (TNT_RESTART_COUNT=0 now, 1..2 on restarts)"
expect_contains "dry run: count exported" "$OUT" "TNT_RESTART_COUNT=0"
run --dry-run --hostfile hosts --npernode 2 --no-gpu --max-restarts 1 --min-ranks 3 -- /bin/true
expect_contains "dry run: min ranks" "$OUT" "while at least 3 ranks remain (--min-ranks)"
run --dry-run --hostfile hosts --npernode 2 --no-gpu --max-restarts 1 --min-ranks 5 -- /bin/true
expect_status "--min-ranks above the ranks of the hostfile: exit status 2" 2
expect_contains "--min-ranks above the ranks of the hostfile" "$ERR" \
  "--min-ranks 5 is more than the 4 ranks the job starts (2 host(s) x 2 rank(s) per node): give --min-ranks 4 or less"

finish
