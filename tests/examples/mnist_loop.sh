#!/usr/bin/env bash
# Bring your own LibTorch program: the plain loop (examples/mnist_loop,
# one process, no Tarantella) and its four-line distributed twin at 2 and 3
# ranks train on Fashion-MNIST.
#  * Weights: after the first 30 batches the twin's weights must equal the
#    plain loop's within 1e-5 (relative, per tensor). Not after a whole
#    epoch: over its 938 steps float rounding is amplified chaotically to
#    ~1-3 % in this network — the plain program itself differs by 3 % between
#    1 and 2 threads — so no implementation can meet 1e-5 there (measured:
#    3 ranks 3e-8 after 30 batches, 1.4e-5 after 50, 6e-4 after 100).
#  * Accuracy: after one whole epoch the twin's test accuracy at 3 ranks (an
#    uneven split of every batch and of the last one) must reach the plain
#    loop's (within 0.005). Not also at 2: the weights after 30 batches show
#    the 2-rank split, and a second whole epoch of training added a third of
#    this test's time for no case of its own.
# Both on the CPU: the programs take a GPU where torch sees one (as
# upstream's example does), so the GPUs are hidden from both
# (CUDA_VISIBLE_DEVICES=), and --no-gpu keeps the twin's world group on MPI.
# The twin differs from the plain program in the four lines that
# docs/guide/byop.md shows.
#   mnist_loop.sh PYTHON LAUNCHER PLAIN DISTRIBUTED WORKDIR
set -euo pipefail
python=$1 launcher=$2 plain=$3 distributed=$4 work=$5
examples=$(cd "$(dirname "$0")/../../examples/mnist_loop" && pwd)
changed=$(diff "$examples/mnist.cpp" "$examples/mnist_distributed.cpp" | grep -c '^>' || true)
if [ "$changed" != 4 ]; then
  echo "FAIL: mnist_distributed.cpp differs from mnist.cpp in $changed lines, not the 4 that docs/guide/byop.md shows"
  exit 1
fi
export CUDA_VISIBLE_DEVICES=
source_dir=/usr/share/datasets/fashion-mnist
mkdir -p "$work/data"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -s "$work/data/$f" ] || gzip -dc "$source_dir/$f.gz" > "$work/data/$f"
done
# One thread, as each rank has: the same BLAS blocking, the same rounding.
OMP_NUM_THREADS=1 "$plain" "$work/data" 1 "$work/plain.pt" 30 > "$work/plain30.log"
OMP_NUM_THREADS=1 "$plain" "$work/data" 1 "$work/plain_epoch.pt" | tee "$work/plain.log"
for n in 2 3; do
  "$launcher" -n "$n" --no-gpu -x CUDA_VISIBLE_DEVICES= -- "$distributed" "$work/data" 1 "$work/n$n.pt" 30 > "$work/n${n}_30.log"
done
"$launcher" -n 3 --no-gpu -x CUDA_VISIBLE_DEVICES= -- "$distributed" "$work/data" 1 "$work/n3_epoch.pt" | tee "$work/n3.log"
"$python" - "$work" <<'PY'
import re, sys, torch
work = sys.argv[1]
def accuracy(log):
    return float(re.findall(r"accuracy: ([0-9.]+)", open(f"{work}/{log}").read())[-1])
# The example programs write a list with torch::pickle_save (a TorchScript
# tensor list, which weights_only=True, torch 2.6+'s default, refuses).
plain = torch.load(f"{work}/plain.pt", weights_only=False)
ok = True
for n in (2, 3):
    got = torch.load(f"{work}/n{n}.pt", weights_only=False)
    assert len(got) == len(plain), f"{n} ranks: {len(got)} tensors, plain loop {len(plain)}"
    worst = max(((a - b).abs().max() / max(1.0, a.abs().max().item())).item()
                for a, b in zip(plain, got))
    print(f"{n} ranks: max relative weight difference after 30 batches {worst:.3g}")
    ok = ok and worst <= 1e-5
acc, ref = accuracy("n3.log"), accuracy("plain.log")
print(f"3 ranks: accuracy after an epoch {acc:.4f} (plain loop {ref:.4f})")
ok = ok and acc >= ref - 0.005
sys.exit(0 if ok else 1)
PY
