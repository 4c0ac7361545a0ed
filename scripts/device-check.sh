#!/usr/bin/env bash
# The GPU-machine recipe: configure against the torch found on the machine,
# build what the checks need with every core, run the checks and the
# benchmarks, and write one report (docs/performance.md, "GPU", takes its
# rows from it). Planned to take at most 5 minutes on 16 cores.
#
#   scripts/device-check.sh OUT_DIR
#
# Made for the GPU machines we borrow (shared/GPU.md of the team: Ubuntu
# 24.04, torch 2.11.0+cu130 in /opt/torch/.venv with its python3 first in
# PATH, CUDA 13.0 at /usr/local/cuda, OpenMPI 4.1.6, 16 cores, no network),
# but it needs no GPU to build: dry-run it anywhere with a pip torch first in
# PATH (PATH=/opt/tnt-venvs/torch-2.15/bin:$PATH scripts/device-check.sh /tmp/dc).
#
# It installs nothing. Every step runs under `timeout`; a failed step is
# reported and the script goes on to the next one, so one run says as much
# as it can. OUT_DIR gets report.md (one line per step: what, seconds,
# result) and every step's raw log. Exit status: 0 when every step passed.
#
# TNT_DEVICE_PYTHON   the interpreter whose torch to build against (default:
#                     python3 from PATH)
# TNT_DEVICE_BUILD    the build folder (default: build-device)
# TNT_DEVICE_STEPS    which steps to run (default: all), e.g. "configure build"
#
# Steps: configure, build, unit_tests, cuda_tests (the NCCL backend at 1
# rank: every collective, a fit, the abort path), gpu_lenet5
# (bench/gpu/lenet5_checks.sh: CUDA = CPU, deterministic bitwise across
# NCCL / staged / 2 ranks sharing the GPU, 2 shared = 1, the device of each
# rank), resnet_python (bench/gpu/resnet_overhead.py: tnt.Model.fit against
# plain PyTorch, fp32 and fp16), resnet_cpp (the C++ tnt::Model::fit of
# bench/scaling on the same ResNet-18), python_tests, gpu_backups
# (bench/checkpoint/background_backup.py with the model on the GPU).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: scripts/device-check.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${TNT_DEVICE_PYTHON:-$(command -v python3)}
build=${TNT_DEVICE_BUILD:-$root/build-device}
steps=${TNT_DEVICE_STEPS:-all}
report=$out/report.md
failed=0
start=$(date +%s)

wanted() { [ "$steps" = all ] || [[ " $steps " == *" $1 "* ]]; }

# step NAME TIMEOUT_S COMMAND...: runs it with its log in OUT_DIR/NAME.log
# and one row in the report.
step() {
  local name=$1 limit=$2
  shift 2
  wanted "$name" || return 0
  local t0=$(date +%s) rc
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  local took=$(( $(date +%s) - t0 )) verdict=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then verdict="TIMEOUT after ${limit} s"; failed=1
  elif [ $rc -ne 0 ]; then verdict="FAILED (exit $rc)"; failed=1; fi
  printf '| %s | %s | %s | `%s` |\n' "$name" "$took" "$verdict" "$*" >>"$report"
  echo "device-check: $name: $verdict ($took s)"
  return $rc
}

{
  echo "# device-check, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "- host: $(hostname), $(nproc) cores"
  echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo none)"
  echo "- python: $py"
  echo "- torch: $("$py" -c 'import torch;print(torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1)"
  echo "- compiler: $(${CXX:-c++} --version 2>/dev/null | head -n 1)"
  echo "- cmake: $(cmake --version | head -n 1)"
  echo "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "| step | s | result | command |"
  echo "|---|---|---|---|"
} >"$report"

prefix=$("$py" -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null)
if [ -z "$prefix" ]; then
  echo "| torch | 0 | FAILED: $py cannot import torch | |" >>"$report"
  echo "device-check: $py cannot import torch: set TNT_DEVICE_PYTHON" >&2
  exit 1
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

step configure 120 cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DTNT_PYTHON_EXECUTABLE="$py" -DTNT_BUILD_BENCHMARKS=ON
# What the steps below use, not the whole tree (examples, docs snippets and
# the multi-rank test programs would double the build).
step build 420 cmake --build "$build" -j "$(nproc)" --target tarantella tnt_launcher tnt_python \
  unit_tests tnt_cli_tests nccl_backend_test bench_scaling
# The tests that need neither Fashion-MNIST nor a cluster: unit tests and
# the layering and header checks, then the multi-rank tests of the engine.
step unit_tests 240 ctest --test-dir "$build" -L unit -j "$(nproc)" --output-on-failure
# The GPU's own tests (tests/cuda: the NCCL backend at 1 rank, every
# collective, the abort path); they report skipped where no GPU is visible.
step cuda_tests 240 ctest --test-dir "$build" -L cuda --output-on-failure
launcher=$build/bin/tarantella
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
step gpu_lenet5 300 bash "$root/bench/gpu/lenet5_checks.sh" "$launcher" "$py" "$out/lenet5"
step resnet_python 300 "$launcher" -n 1 -- "$py" "$root/bench/gpu/resnet_overhead.py" \
  --steps 25 --warmup 10
# The C++ front end on the same network and batch: 35 steps, the first 10
# warm-up (the report's mean drops them).
for precision in none float16; do
  step "resnet_cpp_$precision" 240 "$launcher" -n 1 -- "$build/bench/scaling/bench_scaling" \
    --variant tnt --model resnet18 --image-size 224 --classes 1000 --momentum 0.9 \
    --batch-size 128 --steps 35 --distinct-batches 4 --mixed-precision "$precision"
done
step python_tests 240 ctest --test-dir "$build" -R '^python\.pytest\.n[12]$' --output-on-failure
# Background backups of a model on the GPU: the snapshot goes to pinned
# memory without waiting, the writer waits for the copies (one round,
# the 134 MB model of the CPU figure, on the machine's disk).
step gpu_backups 180 "$launcher" -n 1 -- "$py" "$root/bench/checkpoint/background_backup.py" \
  --steps 60 --save-freq 20 --rounds 1 --dir "$out/backup-bench"

# The figures, pulled out of the logs into the report.
{
  echo
  echo "## Checks (bench/gpu/lenet5_checks.sh)"
  echo
  grep -h '^PASS\|^FAIL' "$out/gpu_lenet5.log" 2>/dev/null | sed 's/^/- /'
  echo
  echo "## ResNet-18, batch 128, one rank"
  echo
  sed -n '/^| ResNet-18/,$p' "$out/resnet_python.log" 2>/dev/null
  echo
  echo "## Background backups of a model on the GPU (bench/checkpoint/background_backup.py)"
  echo
  sed -n '/^| 60 steps/,$p' "$out/gpu_backups.log" 2>/dev/null
  for precision in none float16; do
    "$py" - "$out/resnet_cpp_$precision.log" "$precision" <<'PYEOF' 2>/dev/null
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("RESULT "):
        r = json.loads(line[7:])
        steps = r["step_ms"][10:]
        print(f"- C++ tnt::Model::fit ({sys.argv[2]}): {sum(steps) / len(steps):.2f} ms/step "
              f"(mean of {len(steps)} steps after 10 warm-up)")
PYEOF
  done
} >>"$report"

echo >>"$report"
echo "Total: $(( $(date +%s) - start )) s; logs beside this file." >>"$report"
echo "device-check: report in $report ($(( $(date +%s) - start )) s)"
exit $failed
