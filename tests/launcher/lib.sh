# Helpers sourced by the launcher tests. Each test script is run by ctest as
#   bash TEST.sh PATH/TO/tarantella
# and prints PASS or FAIL lines; any failed check makes it exit non-zero.
set -u

TARANTELLA=${1:?usage: $0 PATH/TO/tarantella}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tnt-launcher-test.XXXXXX")
# Killing leftovers by the unique marker keeps a failing test from leaving
# sleeping ranks behind; the marker appears in every command line we start.
MARK="tntmark$$x$RANDOM"
cleanup_work() {
  pkill -KILL -f "$MARK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup_work EXIT

# The user's settings must not leak into the assertions; nor must a Slurm
# job the suite itself runs in (the launcher would use its allocation).
unset OMP_NUM_THREADS TNT_LOG_LEVEL TNT_FUSION_THRESHOLD
unset "${!SLURM_@}"

FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
pass() { echo "PASS: $*"; }
finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES check(s) failed"
    exit 1
  fi
  exit 0
}

# run ARGS...: runs the launcher, keeping $STATUS, $OUT, $ERR and $ELAPSED_MS.
run() {
  local start
  start=$(date +%s%N)
  "$TARANTELLA" "$@" >"$WORK/stdout" 2>"$WORK/stderr" </dev/null
  STATUS=$?
  ELAPSED_MS=$(( ($(date +%s%N) - start) / 1000000 ))
  OUT=$(cat "$WORK/stdout")
  ERR=$(cat "$WORK/stderr")
}

show_output() {
  echo "--- exit status: $STATUS, ${ELAPSED_MS} ms"
  echo "--- stdout:"; echo "$OUT"
  echo "--- stderr:"; echo "$ERR"
}

# expect_contains NAME HAYSTACK NEEDLE: fixed-string search.
expect_contains() {
  if grep -qF -- "$3" <<<"$2"; then pass "$1"; else fail "$1: missing '$3'"; show_output; fi
}
expect_not_contains() {
  if grep -qF -- "$3" <<<"$2"; then fail "$1: unexpected '$3'"; show_output; else pass "$1"; fi
}
expect_status() {
  if [ "$STATUS" -eq "$2" ]; then pass "$1"; else fail "$1: exit status $STATUS, expected $2"; show_output; fi
}
expect_failure_status() {
  if [ "$STATUS" -ne 0 ]; then pass "$1"; else fail "$1: exit status 0, expected non-zero"; show_output; fi
}
expect_less() {  # NAME VALUE LIMIT
  if [ "$2" -lt "$3" ]; then pass "$1 ($2 < $3)"; else fail "$1: $2 is not below $3"; fi
}

# A copy of sleep whose path contains the marker, so `pgrep -f` finds it (and
# everything started with it on the command line) and nothing else.
marked_sleep() {
  cp "$(command -v sleep)" "$WORK/sleep-$MARK"
  echo "$WORK/sleep-$MARK"
}

# Live (non-zombie) processes whose command line matches the regex $1.
live_pids() {
  local pid
  for pid in $(pgrep -f -- "$1"); do
    [ "$pid" = "$$" ] && continue
    case "$(ps -o stat= -p "$pid" 2>/dev/null)" in
      Z*|"") ;;
      *) echo "$pid" ;;
    esac
  done
}

# wait_for_count REGEX N SECONDS: until exactly N live processes match.
wait_for_count() {
  local deadline=$((SECONDS + $3))
  while [ "$(live_pids "$1" | wc -l)" -ne "$2" ]; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}
