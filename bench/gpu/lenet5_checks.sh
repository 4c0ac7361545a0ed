#!/usr/bin/env bash
# The GPU's correctness checks on LeNet-5 (examples/python/lenet5.py, 20
# steps of 64 over synthetic Fashion-MNIST-shaped data, the same initial
# weights everywhere), each a line "PASS: ..." or "FAIL: ...":
#   cuda_equals_cpu         a normal fit on the GPU (1 rank) equals the same fit
#                           on the CPU within 1e-4: per tensor, max|d| / max|w|
#                           (TF32 off: NVIDIA_TF32_OVERRIDE=0);
#   nccl_equals_mpi         a normal fit at 1 rank over NCCL
#                           (TNT_COMM_BACKEND=nccl) equals the same over MPI
#                           (TNT_COMM_BACKEND=mpi) within 1e-6, both with
#                           deterministic cuDNN kernels (device_probe.py
#                           --deterministic-kernels) so that they can agree
#                           bitwise, as they should (the line says whether):
#                           the NCCL plumbing. Both with --shard-optimizer:
#                           at 1 rank an unsharded fit takes the single-rank
#                           shortcut and no gradient goes over the backend;
#                           sharded, the buckets are reduce-scattered and the
#                           shards allgathered over it;
#   deterministic_shared    deterministic mode (--deterministic 8) at 2 ranks
#                           sharing the GPU (--ranks-per-gpu 2, the host-staged
#                           path over MPI: NCCL refuses two ranks on one GPU)
#                           equals 1 rank bitwise (cmp of the weight files),
#                           with Dropout (--dropout 0.3), so that the GPU
#                           generator's per-chunk seeds count;
#   backends                the transport each run used (its INFO line
#                           "collectives over ...");
#   gpu_identity            the automatic choice took NCCL at 1 rank, naming
#                           the GPU by its PCI bus id (det_one), saw that rank
#                           1 shares rank 0's GPU
#                           (det_shared), and did not warn about it there
#                           (--ranks-per-gpu says it is on purpose);
#   devices                 the device every rank's model trained on, printed
#                           by each rank (bench/gpu/device_probe.py --run) and
#                           asserted: cuda for the GPU runs, cpu for the CPU one.
# (Deterministic mode sums gradients on the host by design, src/dp/exact_sum.cpp,
# so a deterministic NCCL-against-staged comparison at 1 rank would test
# neither path: there is none.)
#
#   bench/gpu/lenet5_checks.sh LAUNCHER PYTHON WORKDIR [LOGDIR]
#
# WORKDIR gets the data and the weights, LOGDIR (default WORKDIR) every run's
# log. Exit status: the number of failed checks (100: no data). Needs a GPU;
# without one the CUDA runs fail with the engine's message.
set -u
LAUNCHER=$1 PY=$2 WORK=$3 LOGS=${4:-$3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EXAMPLE=$here/../../examples/python/lenet5.py
mkdir -p "$WORK" "$LOGS"
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
# run NAME DEVICE [--deterministic-kernels] LAUNCHER-FLAGS... -- EXAMPLE-FLAGS...:
# the example under device_probe.py (every rank prints and checks the device
# it trained on), weights in WORK/NAME.pt, the log (INFO, every rank) in
# LOGS/NAME.log.
run() {
  local name=$1 device=$2 rc probe=()
  shift 2
  if [ "$1" = --deterministic-kernels ]; then
    probe=(--deterministic-kernels)
    shift
  fi
  local flags=()
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  rm -f "$WORK/$name.pt" "$WORK/$name.ok"
  # About 10-15 s each: 45 s is a hang, and the six runs stay within the
  # step's limit of 180 s when one of them hangs.
  timeout -k 5 45 "$LAUNCHER" "${flags[@]}" --log-level INFO --log-on-all-devices \
    --output-on-all-devices \
    -x NVIDIA_TF32_OVERRIDE=0 -x TNT_COMM_TIMEOUT=30 -x CUBLAS_WORKSPACE_CONFIG=:4096:8 -- \
    "$PY" "$here/device_probe.py" --expect "$device" "${probe[@]}" --run "$EXAMPLE" \
    "${COMMON[@]}" --save-weights "$WORK/$name.pt" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && touch "$WORK/$name.ok"
  if [ $rc -ne 0 ]; then
    echo "run $name: exit $rc (log: $LOGS/$name.log), its end:"
    tail -n 20 "$LOGS/$name.log" | sed 's/^/    /'
  fi
  return $rc
}
compare() {  # compare A B TOLERANCE: prints the worst per-tensor max|d| / max|w|
  "$PY" - "$WORK/$1.pt" "$WORK/$2.pt" "$3" <<'PYEOF'
import sys, torch
a = torch.load(sys.argv[1], weights_only=False)
b = torch.load(sys.argv[2], weights_only=False)
tol = float(sys.argv[3])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
def rel(k):
    x, y = a[k].double().cpu(), b[k].double().cpu()
    return ((x - y).abs().max() / x.abs().max().clamp_min(1e-30)).item()
worst, key = max((rel(k), k) for k in a)
same = all(torch.equal(a[k].cpu(), b[k].cpu()) for k in a)
print(f"worst max|d|/max|w| {worst:.3g} ({key}; tolerance {tol:g}){', bitwise equal' if same else ''}")
sys.exit(0 if worst <= tol else 1)
PYEOF
}
have() {  # have RUN...: every run ended with exit status 0 and left its weights
  local r
  for r in "$@"; do [ -f "$WORK/$r.pt" ] && [ -f "$WORK/$r.ok" ] || return 1; done
}
check() {  # check NAME A B TOLERANCE
  local d
  if ! have "$2" "$3"; then
    fail "$1: $2 or $3 did not finish with exit status 0 (logs in $LOGS)"
  elif d=$(compare "$2" "$3" "$4" 2>&1); then
    pass "$1: $3 against $2: $d"
  else
    fail "$1: $3 against $2: $d"
  fi
}

want() {  # want RUN TRANSPORT
  local got
  got=$(grep -o "collectives over [a-z]*" "$LOGS/$1.log" 2>/dev/null | head -n 1 | awk '{print $3}')
  if [ "$got" = "$2" ]; then pass "backends: $1 used $2"; else fail "backends: $1 used ${got:-?}, expected $2"; fi
}
said() {  # said RUN WHAT PATTERN: RUN's log matches PATTERN (grep -E)
  if grep -Eq "$3" "$LOGS/$1.log" 2>/dev/null; then
    pass "gpu_identity: $1 $2"
  else
    fail "gpu_identity: $1 did not say $2 (/$3/ in $LOGS/$1.log)"
  fi
}
devices() {  # devices RUN RANKS DEVICE: every rank's PROBE line names DEVICE
  local lines ok
  lines=$(grep -o 'PROBE rank=[0-9]* device=[^ ]*' "$LOGS/$1.log" 2>/dev/null | sort -u)
  ok=$(grep -c "device=$3\(:[0-9]*\)\{0,1\}$" <<<"$lines")
  if [ "$ok" = "$2" ] && [ "$(grep -c . <<<"$lines")" = "$2" ]; then
    pass "devices: $1: $(tr '\n' ' ' <<<"$lines" | sed 's/PROBE //g; s/ $//')"
  else
    fail "devices: $1: expected $2 ranks on $3, saw: $(tr '\n' ' ' <<<"${lines:-nothing}")"
  fi
}

# Each check is told as soon as its runs are done (a run's own checks right
# after it): a step cut short by its limit still reports the checks before.
run cpu cpu --no-gpu -n 1 --
devices cpu 1 cpu
run cuda_mpi cuda --deterministic-kernels -n 1 -x TNT_COMM_BACKEND=mpi --
devices cuda_mpi 1 cuda; want cuda_mpi mpi
check cuda_equals_cpu cpu cuda_mpi 1e-4
run sharded_mpi cuda --deterministic-kernels -n 1 -x TNT_COMM_BACKEND=mpi -- --shard-optimizer
want sharded_mpi mpi
run sharded_nccl cuda --deterministic-kernels -n 1 -x TNT_COMM_BACKEND=nccl -- --shard-optimizer
devices sharded_nccl 1 cuda; want sharded_nccl nccl
check nccl_equals_mpi sharded_mpi sharded_nccl 1e-6
run det_one cuda -n 1 -- --deterministic 8 --dropout 0.3
devices det_one 1 cuda
said det_one "its GPU's PCI bus id (auto chose NCCL)" \
  "no other rank uses this rank's GPU \([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]\)"
run det_shared cuda -n 2 --ranks-per-gpu 2 -- --deterministic 8 --dropout 0.3
devices det_shared 2 cuda; want det_shared mpi
said det_shared "that rank 1 shares rank 0's GPU" "rank's GPU \([0-9a-f:.]+\) is also used by rank 1"
if grep -q "WARNING.*share a GPU" "$LOGS/det_shared.log" 2>/dev/null; then
  fail "gpu_identity: det_shared warned about sharing although --ranks-per-gpu 2 asked for it"
else
  pass "gpu_identity: det_shared, sharing on purpose, did not warn"
fi
if ! have det_one det_shared; then
  fail "deterministic_shared: det_one or det_shared did not finish (logs in $LOGS)"
elif cmp -s "$WORK/det_one.pt" "$WORK/det_shared.pt"; then
  pass "deterministic_shared: 2 ranks sharing the GPU = 1 rank, bitwise (cmp)"
else
  fail "deterministic_shared: 2 ranks sharing the GPU and 1 rank differ: $(compare det_one det_shared 0 2>&1)"
fi
echo "lenet5_checks: $failures failed"
exit $failures
