#!/usr/bin/env bash
# The per-rank wrapper on its own (as mpirun starts it): exit codes are
# passed through, failures name the rank, stdout of ranks other than 0 is
# dropped, and a program missing on the host gives exit status 127.
source "$(dirname "$0")/lib.sh"

wrap() {  # RANK ARGS...: run the wrapper as that rank
  local rank=$1
  shift
  OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_LOCAL_RANK=$rank OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    run --rank-exec --output=rank0 --threads=auto -- "$@"
}

wrap 0 sh -c 'echo out; exit 0'
expect_status "success passes through" 0
[ "$OUT" = out ] && pass "rank 0 stdout shown" || fail "rank 0 stdout was [$OUT]"

wrap 1 sh -c 'echo hidden; echo visible >&2; exit 4'
expect_status "exit code passes through" 4
[ -z "$OUT" ] && pass "rank 1 stdout dropped" || fail "rank 1 stdout was [$OUT]"
expect_contains "rank 1 stderr shown" "$ERR" "visible"
expect_contains "failure names the rank" "$ERR" "tarantella: rank 1 on host $(hostname) exited with code 4"

wrap 2 sh -c 'kill -SEGV $$'
expect_status "signal death gives 128+11" 139
expect_contains "signal named" "$ERR" "tarantella: rank 2 on host $(hostname) was killed by signal 11 (Segmentation fault)"

wrap 3 "/nonexistent/$MARK"
expect_status "missing program gives 127" 127
expect_contains "missing program named with its rank" "$ERR" "rank 3 on host $(hostname): cannot run /nonexistent/$MARK: No such file or directory"

finish
