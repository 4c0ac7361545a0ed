#!/usr/bin/env bash
# The scaling benchmark, in one invocation: a 2-host simulated
# cluster (bench/cluster) at 1 Gbit/s and then at 10 Gbit/s; on each, for the
# 20M-parameter MLP and ResNet-18 on 32x32 images, the step time of compute
# only, tarantella (defaults, fusion off, overlap off, auto-tuned) and PyTorch
# DDP (gloo) side by side; then a model of step time vs. number of nodes with
# the predicted speed-up up to 256 nodes. Prints markdown tables.
#
#   bench/scaling/run.sh [--high-priority] [--rounds 2] [--rates 1gbit,10gbit]
#                        [--models mlp,resnet18] [--steps 5] [--warmup 2] [--json FILE]
#                        [--mlp-batch 256] [--plot FILE.svg] [--variants compute,tnt,...]
#   python3 bench/scaling/driver.py --from-json FILE [--plot FILE.svg]   (tables of a saved run)
#
# Needs root (network namespaces) and Debian's python3-torch; builds nothing:
#   cmake --build build --target tnt_launcher bench_scaling
# The build folder is ./build, or $TNT_BUILD_DIR. About 6-9 minutes on the
# 2-core development machine. --high-priority: see bench/train_step/run.sh
# (the autogroup nice of this run is set to -19, for a machine shared with
# compilers). The cluster is taken down at the end, also on failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
bench=$build/bench/scaling/bench_scaling
launcher=$build/bin/tarantella
python=${TNT_BENCH_PYTHON:-/usr/bin/python3}
for f in "$bench" "$launcher"; do
  if [ ! -x "$f" ]; then
    echo "run.sh: $f is missing: build it with" \
         "cmake --build $build --target tnt_launcher bench_scaling" >&2
    exit 2
  fi
done
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root to create the simulated hosts (network namespaces)" >&2; exit 2; }
if ! "$python" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "run.sh: $python cannot import torch with gloo: apt-get install python3-torch" >&2
  exit 2
fi
if [ -n "${OMP_NUM_THREADS:-}" ]; then
  echo "run.sh: unsetting OMP_NUM_THREADS=$OMP_NUM_THREADS: each simulated host owns one core" \
       "and its rank takes one thread by the launcher's rule" >&2
  unset OMP_NUM_THREADS
fi
if [ "${1:-}" = "--high-priority" ]; then
  shift
  echo -19 > /proc/self/autogroup
  echo "# scheduling: $(cat /proc/self/autogroup)"
fi
echo "# $(uptime)"
echo "# $(nproc) cores; BLAS: $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)"
here=$root/bench/scaling
exec "$python" "$here/driver.py" --cluster "$root/bench/cluster/cluster.sh" \
  --launcher "$launcher" --bench "$bench" --ddp "$here/ddp_scaling.py" \
  --probe "$here/link_probe.py" --python "$python" "$@"
