#!/usr/bin/env bash
# A rank that fails ends the whole job quickly, and the failing rank is named.
source "$(dirname "$0")/lib.sh"

SLEEP=$(marked_sleep)
# Rank 1 exits with 3; the others would sleep for a minute.
run -n 3 --no-gpu -- sh -c "if [ \"\$OMPI_COMM_WORLD_RANK\" = 1 ]; then exit 3; fi; $SLEEP 60; true"
echo "failing-rank job took ${ELAPSED_MS} ms"
expect_failure_status "job fails"
expect_status "exit code is the rank's" 3
expect_less "job ends within 10 s" "$ELAPSED_MS" 10000
expect_contains "failing rank is named" "$ERR" "tarantella: rank 1 on host"
expect_contains "failing rank's code is named" "$ERR" "exited with code 3"
expect_contains "final summary line" "$ERR" "tarantella: job failed:"
expect_not_contains "stopped ranks are not blamed" "$ERR" "rank 0 on host"
expect_not_contains "mpirun's banners about stopping the job are not shown" "$ERR" "Primary job"
if wait_for_count "$MARK" 0 5; then pass "no rank left running"; else fail "ranks left: $(live_pids "$MARK")"; fi

# A rank killed by a signal is named with the signal.
run -n 3 --no-gpu -- sh -c "if [ \"\$OMPI_COMM_WORLD_RANK\" = 2 ]; then kill -SEGV \$\$; fi; $SLEEP 60; true"
expect_failure_status "crashing rank fails the job"
expect_less "crash ends the job within 10 s" "$ELAPSED_MS" 10000
expect_contains "crash is named" "$ERR" "rank 2 on host"
expect_contains "signal is named" "$ERR" "was killed by signal 11 (Segmentation fault)"
if wait_for_count "$MARK" 0 5; then pass "no rank left running"; else fail "ranks left: $(live_pids "$MARK")"; fi

finish
