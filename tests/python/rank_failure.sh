#!/usr/bin/env bash
# A Python exception on one rank ends the whole job within seconds, naming
# the rank, printed once, with a non-zero exit and no traceback from the
# other ranks. Also: KeyboardInterrupt, and a clean job exits 0.
#   rank_failure.sh LAUNCHER PYTHON BUILD_PYTHON_DIR
set -u
LAUNCHER=$1 PY=$2
export PYTHONPATH=$3 PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tnt-py-failure.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
pass() { echo "PASS: $*"; }

run() {  # run SCRIPT_TEXT RANKS
  printf '%s\n' "$1" >"$WORK/script.py"
  local start=$(date +%s%N)
  "$LAUNCHER" -n "$2" -- "$PY" "$WORK/script.py" >"$WORK/out" 2>"$WORK/err" </dev/null
  STATUS=$?
  MS=$(( ($(date +%s%N) - start) / 1000000 ))
  ERR=$(cat "$WORK/err")
}
show() { echo "--- status $STATUS, $MS ms"; cat "$WORK/out"; echo "--- stderr"; cat "$WORK/err"; }
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then pass "$name"; else fail "$name"; show; fi
}
has() { grep -qF -- "$1" <<<"$ERR"; }
count() { grep -cF -- "$1" <<<"$ERR"; }

# Rank 1 of 3 raises; the others wait in a collective that never completes.
run 'import time, torch, tarantella as tnt
def train_step():
    raise ValueError("bad batch on purpose")
if tnt.get_rank() == 1:
    time.sleep(0.5)
    train_step()
tnt.allreduce(torch.zeros(1))
time.sleep(60)' 3
echo "failing job took $MS ms"
check "job fails" test "$STATUS" -ne 0
check "job ends within 15 s" test "$MS" -lt 15000
check "the rank is named with the error" has "rank 1 on host"
check "the Python error is in the report" has "ValueError: bad batch on purpose"
check "traceback printed once" test "$(count 'Traceback (most recent call last)')" -eq 1
check "traceback lines carry the rank" has "[tarantella rank 1] Traceback"
check "the failing function is shown" has "in train_step"
check "other ranks are not blamed" bash -c "! grep -qE 'rank (0|2) on host' '$WORK/err'"

# KeyboardInterrupt (what Ctrl+C raises) on rank 0 ends every rank.
run 'import time, torch, tarantella as tnt
if tnt.get_rank() == 0:
    raise KeyboardInterrupt
tnt.allreduce(torch.zeros(1))
time.sleep(60)' 2
check "KeyboardInterrupt fails the job" test "$STATUS" -ne 0
check "KeyboardInterrupt ends it within 15 s" test "$MS" -lt 15000
check "KeyboardInterrupt is named" has "interrupted (KeyboardInterrupt"

# A collective that a rank does not reach in time: tnt.TimeoutError with the
# C++ message on the waiting rank; the job then ends (a broken group cannot
# shut down cleanly).
export TNT_COMM_TIMEOUT=2
run 'import sys, time, torch, tarantella as tnt
if tnt.get_rank() == 1:
    time.sleep(8)
try:
    tnt.allreduce(torch.zeros(1))
except tnt.TimeoutError as e:
    print("caught tnt.TimeoutError:", e, file=sys.stderr, flush=True)
    sys.exit(3)' 2
unset TNT_COMM_TIMEOUT
check "timeout fails the job" test "$STATUS" -ne 0
check "the waiting rank gets tnt.TimeoutError" has "caught tnt.TimeoutError: [tarantella rank 0]"

# A clean job exits 0 (the runtime shuts down at exit on every rank).
run 'import torch, tarantella as tnt
tnt.allreduce(torch.ones(1))
print("done", tnt.get_rank())' 3
check "clean job exits 0" test "$STATUS" -eq 0
check "clean job prints nothing on stderr about failures" bash -c "! grep -q failed '$WORK/err'"

if [ "$FAILURES" -ne 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
