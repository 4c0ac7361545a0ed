#!/usr/bin/env bash
# A Python exception on one rank ends the whole job within seconds, naming
# the rank, printed once, with a non-zero exit and no traceback from the
# other ranks. Also: KeyboardInterrupt, and a clean job exits 0. On the CPU
# (--no-gpu) whatever the machine has: the scripts use host tensors only.
#   rank_failure.sh LAUNCHER PYTHON BUILD_PYTHON_DIR
set -u
LAUNCHER=$1 PY=$2
export PYTHONPATH=$3 PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tnt-py-failure.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
pass() { echo "PASS: $*"; }

# The scripts call mark() just before they fail: "within 15 s" counts from
# there, not from the launch (starting ranks that import torch takes
# seconds of its own on a loaded machine). MS: from the mark, or the launch.
MARK_PY='import os, time
def mark():
    open(os.environ["TNT_TEST_MARK"], "w").write(str(time.time_ns()))'
run() {  # run SCRIPT_TEXT RANKS
  printf '%s\n%s\n' "$MARK_PY" "$1" >"$WORK/script.py"
  rm -f "$WORK/mark"
  local start=$(date +%s%N)
  TNT_TEST_MARK="$WORK/mark" "$LAUNCHER" -n "$2" --no-gpu -- "$PY" \
    "$WORK/script.py" >"$WORK/out" 2>"$WORK/err" </dev/null
  STATUS=$?
  local end=$(date +%s%N)
  [ -s "$WORK/mark" ] && start=$(cat "$WORK/mark")
  MS=$(( (end - start) / 1000000 ))
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
    mark()
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
    mark()
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

# tnt.Model: an exception in the module's forward on rank 1 of 3, raised
# while the C++ engine runs the step with the GIL released, ends the job the
# same way (the Python exception crosses the engine and back).
run 'import torch, tarantella as tnt
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
    def forward(self, x):
        if tnt.get_rank() == 1:
            mark()
            raise RuntimeError("forward broke on purpose")
        return self.fc(x)
model = tnt.Model(Net())
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
model.fit(torch.randn(64, 4), torch.randint(0, 2, (64,)), batch_size=16, epochs=2, verbose=0)' 3
check "forward failure fails the job" test "$STATUS" -ne 0
check "forward failure ends it within 15 s" test "$MS" -lt 15000
check "forward failure names rank 1" has "rank 1 on host"
check "forward failure shows the error" has "forward broke on purpose"
check "forward failure: one traceback" test "$(count 'Traceback (most recent call last)')" -eq 1
check "forward failure: other ranks not blamed" bash -c "! grep -qE 'rank (0|2) on host' '$WORK/err'"

# A user callback that raises on rank 0 of 2.
run 'import torch, tarantella as tnt
class Broken(tnt.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if tnt.get_rank() == 0:
            mark()
            raise ValueError("callback broke on purpose")
net = torch.nn.Linear(4, 2)
model = tnt.Model(net)
model.compile(optimizer=torch.optim.SGD(net.parameters(), lr=0.1), loss=torch.nn.CrossEntropyLoss())
model.fit(torch.randn(64, 4), torch.randint(0, 2, (64,)), batch_size=16, epochs=3, verbose=0,
          callbacks=[Broken()])' 2
check "callback failure fails the job" test "$STATUS" -ne 0
check "callback failure ends it within 15 s" test "$MS" -lt 15000
check "callback failure names rank 0" has "rank 0 on host"
check "callback failure shows the error" has "callback broke on purpose"
check "callback failure: one traceback" test "$(count 'Traceback (most recent call last)')" -eq 1

# A non-Module model: a clear TypeError on every rank, the job fails.
run 'import tarantella as tnt
tnt.Model(lambda x: x)' 2
check "non-Module fails the job" test "$STATUS" -ne 0
check "non-Module: the message names the fix" has "tnt.Model: module must be a torch.nn.Module, got a function"

# A clean job exits 0 (the runtime shuts down at exit on every rank).
run 'import torch, tarantella as tnt
tnt.allreduce(torch.ones(1))
print("done", tnt.get_rank())' 3
check "clean job exits 0" test "$STATUS" -eq 0
check "clean job prints nothing on stderr about failures" bash -c "! grep -q failed '$WORK/err'"

if [ "$FAILURES" -ne 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
