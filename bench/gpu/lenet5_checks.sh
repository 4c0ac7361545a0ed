#!/usr/bin/env bash
# The GPU's correctness checks on LeNet-5 (examples/python/lenet5.py) over
# synthetic Fashion-MNIST-shaped data, each a PASS/FAIL line:
#   cuda_equals_cpu        20 steps on CUDA equal the CPU run within 1e-4
#                          (relative), TF32 off (NVIDIA_TF32_OVERRIDE=0);
#   deterministic_*        deterministic mode (--deterministic 8), bitwise
#                          (cmp): NCCL at 1 rank = the staged path at 1 rank
#                          (TNT_COMM_BACKEND=mpi) = 2 ranks sharing the GPU
#                          (--ranks-per-gpu 2, staged);
#   shared_equals_one      2 ranks sharing the GPU equal 1 rank within 1e-5;
#   backends               which transport each run used (the INFO log line
#                          "collectives over ...");
#   devices                every rank's model is on cuda:0 when 2 share it.
#
#   bench/gpu/lenet5_checks.sh LAUNCHER PYTHON WORKDIR
#
# Exit status: the number of failed checks. Needs a GPU; on a machine
# without one the CUDA runs fail with the engine's message (TNT_USE_GPU).
set -u
LAUNCHER=$1 PY=$2 WORK=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EXAMPLE=$here/../../examples/python/lenet5.py
mkdir -p "$WORK"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }

"$PY" "$here/fake_fashion_mnist.py" "$WORK/data" --train 1280 --test 64 || exit 100
"$PY" - "$WORK/init.pt" "$EXAMPLE" <<'PYEOF' || exit 100
import sys, torch
source = open(sys.argv[2]).read()
namespace = {"torch": torch}
exec(source[source.index("class LeNet5"):source.index("class FashionMNIST")], namespace)
torch.manual_seed(5)
torch.save(namespace["LeNet5"]().state_dict(), sys.argv[1])
PYEOF

# 20 steps of 64: the whole synthetic training set once, in order.
COMMON=(--data "$WORK/data" --epochs 1 --train-size 1280 --val-size 0 --test-size 64
        --batch-size 64 --no-shuffle --verbose 0 --init-weights "$WORK/init.pt")
# run NAME LAUNCHER-FLAGS... -- EXAMPLE-FLAGS...: weights in WORK/NAME.pt,
# the log (INFO, every rank) in WORK/NAME.log.
run() {
  local name=$1; shift
  local flags=()
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  timeout 300 "$LAUNCHER" "${flags[@]}" --log-level INFO --log-on-all-devices \
    -x NVIDIA_TF32_OVERRIDE=0 -x TNT_COMM_TIMEOUT=60 -- \
    "$PY" "$EXAMPLE" "${COMMON[@]}" --save-weights "$WORK/$name.pt" "$@" >"$WORK/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || { fail "$name: exit $rc (log: $WORK/$name.log)"; tail -n 20 "$WORK/$name.log"; }
  return $rc
}
compare() {  # compare A B TOLERANCE WHAT
  "$PY" - "$WORK/$1.pt" "$WORK/$2.pt" "$3" <<'PYEOF'
import sys, torch
a = torch.load(sys.argv[1], weights_only=False)
b = torch.load(sys.argv[2], weights_only=False)
tol = float(sys.argv[3])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
worst = max(((a[k].double() - b[k].double()).abs().max()
             / max(1.0, a[k].abs().max().item())).item() for k in a)
print(f"worst relative difference {worst:.3g} (tolerance {tol:g})")
sys.exit(0 if worst <= tol else 1)
PYEOF
}
backend_of() {  # the transport named in a run's log, or "unknown"
  grep -o "collectives over [a-z]*" "$WORK/$1.log" | head -n 1 | awk '{print $3}' | grep . ||
    echo unknown
}

run cpu --no-gpu -n 1 -- && run cuda -n 1 -- &&
  { d=$(compare cpu cuda 1e-4) && pass "cuda_equals_cpu: $d" || fail "cuda_equals_cpu: $d"; }

run det_nccl -n 1 -- --deterministic 8
run det_staged -n 1 -x TNT_COMM_BACKEND=mpi -- --deterministic 8
run det_shared -n 2 --ranks-per-gpu 2 -- --deterministic 8
for pair in "det_nccl det_staged" "det_staged det_shared"; do
  set -- $pair
  if [ -f "$WORK/$1.pt" ] && [ -f "$WORK/$2.pt" ] && cmp -s "$WORK/$1.pt" "$WORK/$2.pt"; then
    pass "deterministic_bitwise: $1 = $2 (cmp)"
  else
    fail "deterministic_bitwise: $1 and $2 differ (or one is missing)"
  fi
done

run shared -n 2 --ranks-per-gpu 2 -- &&
  { d=$(compare cuda shared 1e-5) && pass "shared_equals_one: $d" || fail "shared_equals_one: $d"; }

want() {  # want RUN TRANSPORT
  local got; got=$(backend_of "$1")
  [ "$got" = "$2" ] && pass "backends: $1 used $2" || fail "backends: $1 used $got, expected $2"
}
want cuda nccl; want det_nccl nccl; want det_staged mpi; want det_shared mpi; want shared mpi

if timeout 120 "$LAUNCHER" -n 2 --ranks-per-gpu 2 -- "$PY" "$here/device_probe.py" \
     --expect cuda:0 >"$WORK/devices.log" 2>&1; then
  pass "devices: $(grep -c '^.*PROBE' "$WORK/devices.log") ranks on cuda:0"
else
  fail "devices: $(grep PROBE "$WORK/devices.log" | tr '\n' ' ') (log: $WORK/devices.log)"
fi
echo "lenet5_checks: $failures failed"
exit $failures
