#!/usr/bin/env bash
# Training-step throughput, all variants in one run:
# LeNet-5 and a 20M-parameter MLP, global batch 256, plain LibTorch vs
# tarantella at 1 and 2 ranks vs PyTorch DDP (gloo) at 1 and 2 processes vs
# one LibTorch process with 2 threads. Prints one markdown table.
#
#   bench/train_step/run.sh [--high-priority] [--rounds 7] [--models lenet,mlp] [--json FILE]
#
# --high-priority (root): on a machine shared with other work (compilers),
# gives this run's session scheduling weight over every other session (the
# kernel's autogroup nice, -19), so the variants measure the code and not the
# neighbours. Without it, run on an idle machine.
#
# Builds nothing: build the launcher and bench_train_step first, e.g.
#   cmake --build build --target tnt_launcher bench_train_step
# The build folder is ./build, or $TNT_BUILD_DIR. Takes ~7 minutes on the
# 2-core development machine; run it on an otherwise idle machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
bench=$build/bench/train_step/bench_train_step
launcher=$build/bin/tarantella
python=${TNT_BENCH_PYTHON:-/usr/bin/python3}
for f in "$bench" "$launcher"; do
  if [ ! -x "$f" ]; then
    echo "run.sh: $f is missing: build it with" \
         "cmake --build $build --target tnt_launcher bench_train_step" >&2
    exit 2
  fi
done
if ! "$python" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "run.sh: $python cannot import torch with gloo: apt-get install python3-torch" \
       "(or point TNT_BENCH_PYTHON at a python that has it)" >&2
  exit 2
fi
if [ "${1:-}" = "--high-priority" ]; then
  shift
  echo -19 > /proc/self/autogroup  # this session; every variant inherits it
  echo "# scheduling: $(cat /proc/self/autogroup)"
fi
echo "# $(uptime)"
echo "# BLAS: $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)"
exec "$python" "$root/bench/train_step/driver.py" --bench "$bench" --launcher "$launcher" \
  --ddp "$root/bench/train_step/ddp_bench.py" --python "$python" "$@"
