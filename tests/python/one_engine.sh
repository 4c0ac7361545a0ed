#!/usr/bin/env bash
# examples/python/lenet5.py against the serial truth and against C++:
#  * at 1 and 3 ranks (an uneven split) it matches an independent serial PyTorch loop
#    (plain torch.optim.SGD, same initial weights and batches, no
#    tarantella) within 1e-5 relative after 30 steps;
#  * one engine, two front ends: it and the C++ examples/lenet5 on the same
#    network, data, initial weights and order give bitwise equal weights at
#    1 rank and within 1e-6 at 2;
#  * its deterministic mode gives bitwise equal weight files at 1 and 3
#    ranks (cmp; uneven chunk shares).
# 2 and 4 ranks are python.pytest.n2/n4's, the engine's at every count
# engine_test's (in process): each launch here is a few Python starts, so
# this test keeps the rank counts that add a case.
# Every run on the CPU (--no-gpu), whatever the machine has: the truth is a
# CPU loop, and bitwise equality across rank counts and front ends needs one
# device for all of them.
#   one_engine.sh LAUNCHER PYTHON BUILD_PYTHON_DIR LENET5_BINARY EXAMPLES_PYTHON_DIR
set -u
LAUNCHER=$1 PY=$2 LENET5=$4 EXAMPLE=$5/lenet5.py
export PYTHONPATH=$3 PYTHONDONTWRITEBYTECODE=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tnt-one-engine.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
pass() { echo "PASS: $*"; }

# Small and fixed: 640 training samples (10 steps of 64), no shuffle, no
# validation, the same initial weights file for both.
COMMON=(--epochs 1 --train-size 640 --val-size 0 --test-size 200 --no-shuffle --verbose 0)
"$PY" - "$WORK/init.pt" "$EXAMPLE" <<'EOF' || { echo "cannot write the initial weights"; exit 1; }
import sys, torch
# Only the class is needed: importing the module would start the runtime.
source = open(sys.argv[2]).read()
start = source.index("class LeNet5")
end = source.index("class FashionMNIST")
namespace = {"torch": torch}
exec(source[start:end], namespace)
torch.manual_seed(5)
torch.save(namespace["LeNet5"]().state_dict(), sys.argv[1])
EOF

compare() {  # compare A B TOLERANCE -> prints the worst relative difference
  "$PY" - "$1" "$2" "$3" <<'EOF'
import sys, torch
a, b, tol = torch.load(sys.argv[1]), torch.load(sys.argv[2]), float(sys.argv[3])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
worst = max(((a[k] - b[k]).abs().max() / max(1.0, a[k].abs().max().item())).item() for k in a)
print(f"worst relative difference {worst:.3g} (tolerance {tol:g})")
sys.exit(0 if worst <= tol else 1)
EOF
}

# The serial truth: 30 steps of 64 over the first 1920 training samples in
# file order, in plain PyTorch (the example's classes, read from its file
# without importing tarantella).
"$PY" - "$WORK/init.pt" "$EXAMPLE" "$WORK/serial.pt" <<'EOF' || { fail "serial loop"; }
import sys, torch
source = open(sys.argv[2]).read()
namespace = {"torch": torch}
exec("import gzip, os\nimport numpy as np\nDATA = '/usr/share/datasets/fashion-mnist'\n" +
     source[source.index("class LeNet5"):source.index("def main")], namespace)
net = namespace["LeNet5"]()
net.load_state_dict(torch.load(sys.argv[1]))
data = namespace["FashionMNIST"]("train", count=1920)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(30):
    x, y = data.images[step * 64:(step + 1) * 64], data.labels[step * 64:(step + 1) * 64]
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
torch.save(net.state_dict(), sys.argv[3])
EOF
for ranks in 1 3; do
  timeout 240 "$LAUNCHER" -n "$ranks" --no-gpu -- "$PY" "$EXAMPLE" --epochs 1 --train-size 1920 \
      --val-size 0 --test-size 200 --no-shuffle --verbose 0 --init-weights "$WORK/init.pt" \
      --save-weights "$WORK/steps30_$ranks.pt" >"$WORK/py.log" 2>&1 \
    || { fail "30 steps at $ranks ranks"; cat "$WORK/py.log"; continue; }
  if compare "$WORK/serial.pt" "$WORK/steps30_$ranks.pt" 1e-5; then
    pass "$ranks ranks: 30 steps match the serial PyTorch loop"
  else
    fail "$ranks ranks: 30 steps differ from the serial PyTorch loop"
  fi
done

for ranks in 1 2; do
  tol=$([ "$ranks" = 1 ] && echo 0 || echo 1e-6)
  timeout 240 "$LAUNCHER" -n "$ranks" --no-gpu -- "$LENET5" "${COMMON[@]}" \
      --init-weights "$WORK/init.pt" --save-weights "$WORK/cpp$ranks.pt" >"$WORK/cpp.log" 2>&1 \
    || { fail "C++ example at $ranks ranks"; cat "$WORK/cpp.log"; continue; }
  timeout 240 "$LAUNCHER" -n "$ranks" --no-gpu -- "$PY" "$EXAMPLE" "${COMMON[@]}" \
      --init-weights "$WORK/init.pt" --save-weights "$WORK/py$ranks.pt" >"$WORK/py.log" 2>&1 \
    || { fail "Python example at $ranks ranks"; cat "$WORK/py.log"; continue; }
  if [ "$ranks" = 1 ] && cmp -s "$WORK/cpp1.pt" "$WORK/py1.pt"; then
    pass "1 rank: the weight files are byte for byte the same"
  elif compare "$WORK/cpp$ranks.pt" "$WORK/py$ranks.pt" "$tol"; then
    pass "$ranks ranks: C++ and Python weights agree"
  else
    fail "$ranks ranks: C++ and Python weights differ"
  fi
done

for ranks in 1 3; do
  timeout 240 "$LAUNCHER" -n "$ranks" --no-gpu -- "$PY" "$EXAMPLE" "${COMMON[@]}" --deterministic 4 \
      --init-weights "$WORK/init.pt" --save-weights "$WORK/det$ranks.pt" >"$WORK/det.log" 2>&1 \
    || { fail "deterministic run at $ranks ranks"; cat "$WORK/det.log"; }
done
for ranks in 3; do
  if cmp "$WORK/det1.pt" "$WORK/det$ranks.pt"; then
    pass "deterministic mode: $ranks ranks bitwise equal to 1 rank"
  else
    compare "$WORK/det1.pt" "$WORK/det$ranks.pt" 0
    fail "deterministic mode: $ranks ranks differ from 1 rank"
  fi
done

echo "$FAILURES failure(s)"
[ "$FAILURES" = 0 ]
