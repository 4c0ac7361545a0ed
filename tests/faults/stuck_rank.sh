#!/usr/bin/env bash
# Usage: stuck_rank.sh LAUNCHER KIND [PYTHON PYTHONPATH | PROGRAM]
# Rank 1 of 2 (3 for KIND python_n3) gets stuck in its own code before a
# collective; with
# TNT_COMM_TIMEOUT=3 the job must end within the timeout plus 10 s of that,
# and its report must say where rank 1 is:
#   python   the file and line of the stuck Python code, and its function
#   python_n3  the same with 3 ranks: ranks 0 and 2 both ask, both say where
#   cxx      the C++ function it is stuck in (PROGRAM: stuck_rank)
#   stopped  the Python rank is also stopped (SIGSTOP): the report says that
#            its stack is not available, without waiting for it
#   data     rank 1's data pipeline is stuck in a map function (on the
#            prefetch thread): the report names the runtime's thread (waiting
#            for its next element) and the prefetch thread in the map function
# On the CPU (--no-gpu) whatever the machine has: the programs use host
# tensors only, and the reports under test are the MPI transport's.
set -u
launcher=$1; kind=$2; shift 2
timeout_s=3
fail() { echo "FAIL: $*"; echo "--- output"; cat "$log"; [ -n "${job:-}" ] && kill -KILL "$job" 2>/dev/null; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tnt-stuck.XXXXXX")
log=$work/log
trap 'rm -rf "$work"; [ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null' EXIT
marker="tnt-stuck-$$-$RANDOM"
if [ "$kind" = cxx ]; then
  program=$1
  command=("$program")
else
  python=$1; export PYTHONPATH=$2 PYTHONDONTWRITEBYTECODE=1
  program=$work/stuck.py
  if [ "$kind" = data ]; then
    # Line 6 is where rank 1's map function waits, line 11 where its loop does.
    cat >"$program" <<'PY'
import sys, time, torch, tarantella as tnt

def slow(i):
    if tnt.get_rank() == 1 and int(i) == 2:
        print("rank 1 is stuck now", file=sys.stderr, flush=True)
        time.sleep(600)
    return i

tnt.allreduce(torch.zeros(1))
dataset = tnt.data.Dataset.range(0, 8).map(slow).prefetch(2)
for element in dataset:
    tnt.allreduce(torch.zeros(1))
PY
  else
  # Line 5 is where rank 1 waits.
  cat >"$program" <<'PY'
import sys, time, torch, tarantella as tnt

def train():
    print("rank 1 is stuck now", file=sys.stderr, flush=True)
    time.sleep(600)

tnt.allreduce(torch.zeros(1))
if tnt.get_rank() == 1:
    train()
tnt.allreduce(torch.zeros(1))
PY
  fi
  command=("$python" "$program")
fi
ranks=2; [ "$kind" = python_n3 ] && ranks=3
"$launcher" -n $ranks --no-gpu -x TNT_COMM_TIMEOUT=$timeout_s -x "TNT_TEST_MARKER=$marker" -- "${command[@]}" \
  >"$log" 2>&1 </dev/null &
job=$!
for _ in $(seq 600); do grep -q "rank 1 is stuck now" "$log" && break; sleep 0.1; done
grep -q "rank 1 is stuck now" "$log" || fail "rank 1 did not get stuck"
start=$(date +%s.%N)
if [ "$kind" = stopped ]; then
  # shellcheck source=rank_pid.sh
  . "$(dirname "$0")/rank_pid.sh"
  pid=$(rank_pid "$program" "$marker" 1)
  [ -n "$pid" ] || fail "no process of rank 1 found"
  kill -STOP "$pid"
fi
limit=$((timeout_s + 10))
while kill -0 "$job" 2>/dev/null; do
  elapsed=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')
  awk -v e="$elapsed" -v l="$limit" 'BEGIN { exit !(e > l + 20) }' && fail "the job was still running ${elapsed} s after rank 1 got stuck"
  sleep 0.1
done
wait "$job"; status=$?
elapsed=$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')
grep "is in \|not available\|did not arrive\|failed:" "$log" | cut -c1-400
[ "$status" -ne 0 ] || fail "the job exited 0"
awk -v e="$elapsed" -v l="$limit" 'BEGIN { exit !(e <= l) }' \
  || fail "the job took ${elapsed} s to end after rank 1 got stuck (limit: the timeout plus 10 s, ${limit} s)"
grep -q "rank 1 (on host [^)]*) did not arrive within the timeout" "$log" \
  || fail "the timeout report does not name rank 1"
case $kind in
  python|python_n3)
    where="rank 1 \(host [^)]+\) is in stuck\.py line 5 \(time\.sleep\) ← train\(\) ← <module>"
    grep -qE "$where" "$log" \
      || fail "the report does not say that rank 1 is in stuck.py line 5 (time.sleep) in train()"
    if [ "$kind" = python_n3 ]; then
      grep -qE "\[tarantella rank 2\] collective .*$where" "$log" \
        || fail "rank 2's error does not say where rank 1 is"
    fi ;;
  cxx)
    grep -qE "rank 1 \(host [^)]+\) is in .*stuck_in_user_code\(\)" "$log" \
      || fail "the report does not name the function rank 1 is stuck in" ;;
  data)
    main="rank 1 \(host [^)]+\) is in stuck\.py line 11 ← <module> \(the thread that started the runtime\)"
    pipeline="its data pipeline thread 'prefetch' is in stuck\.py line 6 \(time\.sleep\) ← slow\(\)"
    grep -qE "$main; $pipeline" "$log" \
      || fail "the report does not say that rank 1 waits for its data at line 11 while its prefetch thread is in slow() at line 6" ;;
  stopped)
    grep -qE "the stack of rank 1 \(host [^)]+\) is not available: it did not answer" "$log" \
      || fail "the report does not say that rank 1's stack is not available" ;;
esac
echo "PASS: $kind: the job ended ${elapsed} s after rank 1 got stuck (status $status), saying where it is"
