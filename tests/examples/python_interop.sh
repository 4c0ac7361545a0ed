#!/usr/bin/env bash
# Weight files are interchangeable with Python PyTorch (Debian's python3-torch):
# C++ saves -> Python torch.load + load_state_dict(strict) + torch.save(state_dict)
# -> C++ loads (OrderedDict) and saves again -> Python finds the same tensors.
# Usage: python_interop.sh PYTHON LAUNCHER LENET5 WORKDIR
set -euo pipefail
python=$1; launcher=$2; lenet=$3; work=$4
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "SKIP: python3-torch is not installed for $python"; exit 0
fi
rm -rf "$work"; mkdir -p "$work"
common=(--train-size 2000 --val-size 0 --test-size 500 --verbose 0)
"$launcher" -n 2 -- "$lenet" "${common[@]}" --epochs 1 --save-weights "$work/cpp.pt"
"$python" - "$work" <<'PY'
import sys, torch
work = sys.argv[1]
class LeNet5(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1 = torch.nn.Linear(400, 120)
        self.fc2 = torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, 10)
weights = torch.load(f"{work}/cpp.pt")
assert isinstance(weights, dict), type(weights)
net = LeNet5()
net.load_state_dict(weights, strict=True)          # names and shapes match
torch.save(net.state_dict(), f"{work}/python.pt")  # an OrderedDict
print("python: loaded", len(weights), "tensors from C++, saved state_dict")
PY
"$launcher" -n 2 -- "$lenet" "${common[@]}" --epochs 0 --init-weights "$work/python.pt" \
    --save-weights "$work/roundtrip.pt"
"$python" - "$work" <<'PY'
import sys, torch
work = sys.argv[1]
a, b = torch.load(f"{work}/python.pt"), torch.load(f"{work}/roundtrip.pt")
assert set(a) == set(b), (set(a) ^ set(b))
for k in a:
    assert torch.equal(a[k], b[k]), k
print("PASS: weights round-trip C++ -> Python -> C++ -> Python bit for bit")
PY
