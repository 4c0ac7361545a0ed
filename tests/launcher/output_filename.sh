#!/usr/bin/env bash
# --output-filename DIR: every rank's complete, unprefixed stdout and stderr
# land in DIR/rank.N/{stdout,stderr} (Horovod's layout) while the console
# shows exactly what it shows without the flag; a relative DIR is the
# launcher's; a DIR that cannot be created stops the launch before any rank
# starts; a rank that cannot create its files, or a failed write, is named.
source "$(dirname "$0")/lib.sh"

# Each rank: a line, $NLINES numbered lines (3000: more than a pipe buffer),
# a line on stderr, and a last stdout line without a newline.
export NLINES=3000
PROG='r=$OMPI_COMM_WORLD_RANK; echo "out $r"; seq 1 $NLINES | sed "s/^/n$r /"; echo "err $r" >&2; printf "last $r"'
expected_stdout() { r=$1 sh -c "echo \"out \$r\"; seq 1 $NLINES | sed \"s/^/n\$r /\"; printf \"last \$r\""; }

# keep NAME: saves the last run's console streams byte for byte.
keep() { cp "$WORK/stdout" "$WORK/$1.out"; cp "$WORK/stderr" "$WORK/$1.err"; }

# same_file NAME ACTUAL EXPECTED-FILE
same_file() {
  if cmp -s "$2" "$3"; then pass "$1"; else fail "$1: $2 differs from $3"; diff "$2" "$3" | head -5; fi
}

# check_rank_files NAME DIR RANKS: the files of ranks 0..RANKS-1 and nothing else.
check_rank_files() {
  local r
  for ((r = 0; r < $3; r++)); do
    expected_stdout "$r" >"$WORK/expected"
    same_file "$1: rank $r stdout file complete, unprefixed" "$2/rank.$r/stdout" "$WORK/expected"
    printf 'err %s\n' "$r" >"$WORK/expected"
    same_file "$1: rank $r stderr file" "$2/rank.$r/stderr" "$WORK/expected"
  done
  local listed
  listed=$(ls "$2" | tr '\n' ' ')
  local want
  want=$(for ((r = 0; r < $3; r++)); do echo "rank.$r"; done | tr '\n' ' ')
  [ "$listed" = "$want" ] && pass "$1: one folder per rank" || fail "$1: $2 holds [$listed], expected [$want]"
}

# Sorted lines: the order between ranks is not deterministic.
same_lines() {
  if [ "$(sort "$2")" = "$(sort "$3")" ]; then pass "$1"; else fail "$1: $2 and $3 differ"; diff <(sort "$2") <(sort "$3") | head -5; fi
}

for ranks in 2 3; do
  run -n "$ranks" --no-gpu -- sh -c "$PROG"
  keep plain
  run -n "$ranks" --no-gpu --output-filename "$WORK/logs$ranks" -- sh -c "$PROG"
  expect_status "$ranks ranks with --output-filename succeed" 0
  same_file "$ranks ranks: console stdout unchanged (rank 0 only)" "$WORK/stdout" "$WORK/plain.out"
  same_lines "$ranks ranks: console stderr unchanged" "$WORK/stderr" "$WORK/plain.err"
  check_rank_files "$ranks ranks" "$WORK/logs$ranks" "$ranks"
done

# Few lines: with many, mpirun itself may split a line between two ranks'
# output (with or without --output-filename), which would make this flaky.
export NLINES=20
run -n 3 --no-gpu --output-on-all-devices -- sh -c "$PROG"
keep all
run -n 3 --no-gpu --output-on-all-devices --output-filename "$WORK/logs-all" -- sh -c "$PROG"
expect_status "--output-on-all-devices with --output-filename succeeds" 0
same_lines "all devices: console stdout unchanged ([R] prefixes)" "$WORK/stdout" "$WORK/all.out"
same_lines "all devices: console stderr unchanged" "$WORK/stderr" "$WORK/all.err"
expect_contains "all devices: console completes the last line" "$(cat "$WORK/stdout")" "[2] last 2"
check_rank_files "all devices" "$WORK/logs-all" 3
export NLINES=3000

# An unterminated last stderr line is kept as it is, in the file.
run -n 2 --no-gpu --output-filename "$WORK/logs-tail" -- \
  sh -c 'printf "tail $OMPI_COMM_WORLD_RANK" >&2'
for r in 0 1; do
  printf 'tail %s' "$r" >"$WORK/expected"
  same_file "rank $r unterminated stderr kept exactly" "$WORK/logs-tail/rank.$r/stderr" "$WORK/expected"
done

# A relative DIR is resolved against the launcher's directory, once.
mkdir -p "$WORK/here"
cd "$WORK/here" || exit 1
run --dry-run -n 2 --no-gpu --output-filename rel/logs -- sh -c "$PROG"
expect_contains "dry run: absolute directory for the ranks" "$OUT" "--output-dir=$WORK/here/rel/logs"
expect_contains "dry run: note names the files" "$OUT" \
  "# each rank's stdout and stderr are also written to $WORK/here/rel/logs/rank.N/stdout"
[ ! -e "$WORK/here/rel" ] && pass "dry run creates nothing" || fail "dry run created $WORK/here/rel"
run -n 2 --no-gpu --output-filename rel/logs -- sh -c "$PROG"
expect_status "relative directory succeeds" 0
check_rank_files "relative directory" "$WORK/here/rel/logs" 2
cd "$WORK" || exit 1

# A DIR that cannot be created fails on the launching node, before mpirun.
touch "$WORK/plain-file"
for dir in "$WORK/plain-file/logs" "$WORK/plain-file"; do
  run -n 2 --no-gpu --output-filename "$dir" -- sh -c "touch $WORK/started-$MARK"
  expect_status "unusable $dir: usage error" 2
  expect_contains "unusable $dir: message names the path" "$ERR" \
    "tarantella: error: --output-filename: cannot create directory $dir"
  [ ! -e "$WORK/started-$MARK" ] && pass "unusable $dir: no rank started" || fail "a rank ran"
  expect_less "unusable $dir: fails at once (no mpirun started)" "$ELAPSED_MS" 10000
done

# The wrapper on a rank whose host cannot create DIR/rank.N names rank and path.
OMPI_COMM_WORLD_RANK=1 run --rank-exec --output=rank0 --threads=auto \
  "--output-dir=$WORK/plain-file/x" -- sh -c "touch $WORK/started-$MARK"
expect_status "rank that cannot create its files: usage error" 2
expect_contains "per-rank failure names rank and path" "$ERR" \
  "tarantella: rank 1 on host $(hostname): --output-filename: cannot create directory $WORK/plain-file/x/rank.1"
[ ! -e "$WORK/started-$MARK" ] && pass "per-rank failure: program not started" || fail "program ran"

# A failed write is reported once, naming the file; the console is unaffected.
mkdir -p "$WORK/full/rank.0"
ln -s /dev/full "$WORK/full/rank.0/stdout"
run -n 2 --no-gpu --output-filename "$WORK/full" -- sh -c 'seq 1 5000'
expect_status "write errors do not fail the job" 0
[ "$(wc -l <"$WORK/stdout")" -eq 5000 ] && pass "console still gets every line" || fail "console lost lines"
expect_contains "write error names the file" "$ERR" \
  "cannot write $WORK/full/rank.0/stdout: No space left on device"
reports=$(grep -c "cannot write" <<<"$ERR")
[ "$reports" -eq 1 ] && pass "write error reported once" || fail "write error reported $reports times"
[ "$(wc -l <"$WORK/full/rank.1/stdout")" -eq 5000 ] && pass "other rank's file complete" || fail "rank 1's file incomplete"

# Stopping still works with both streams going through the wrapper, and
# what was written before the stop is in the files.
SLEEP=$(marked_sleep)
"$TARANTELLA" -n 2 --no-gpu --output-filename "$WORK/stopped" -- \
  sh -c "echo before \$OMPI_COMM_WORLD_RANK; echo warn >&2; $SLEEP 60" \
  >"$WORK/out" 2>"$WORK/err" </dev/null &
launcher=$!
if wait_for_count "^$SLEEP 60" 2 20; then pass "2 ranks running"; else fail "ranks did not start"; fi
kill -TERM "$launcher"
wait "$launcher"
STATUS=$?
expect_status "stopped job: exit status 128+SIGTERM" 143
wait_for_count "$MARK" 0 10 && pass "stopped job: no rank left" || fail "stopped job: ranks left"
for r in 0 1; do
  [ "$(cat "$WORK/stopped/rank.$r/stdout")" = "before $r" ] && pass "stopped job: rank $r stdout saved" \
    || fail "stopped job: rank $r stdout file holds [$(cat "$WORK/stopped/rank.$r/stdout")]"
  [ "$(cat "$WORK/stopped/rank.$r/stderr")" = "warn" ] && pass "stopped job: rank $r stderr saved" \
    || fail "stopped job: rank $r stderr file holds [$(cat "$WORK/stopped/rank.$r/stderr")]"
done

finish
