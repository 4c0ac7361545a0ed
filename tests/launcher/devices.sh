#!/usr/bin/env bash
# The device rule of the Tarantella manual (§6.2) and explicit GPU requests:
# a CPU run on a node without GPUs says nothing about GPUs; an
# explicit -x TNT_USE_GPU=true that cannot be met is an error (exit status 2,
# the value and the fix named), never a quiet CPU run.
#   devices.sh LAUNCHER [LENET5]
# With LENET5 (built), a rank that is asked for a GPU its LibTorch cannot
# see fails naming TNT_USE_GPU, instead of training on the CPU.
source "$(dirname "$0")/lib.sh"
LENET5=${2:-}

cd "$WORK" || exit 1
printf '#!/bin/sh\necho "device=$TNT_USE_GPU"\n' >prog && chmod +x prog

# No GPU installed, nothing GPU-related asked for: silence, in the plan and
# in a real job (the GPU count is fixed so a GPU test machine gives the same).
for ranks in "" "-n 1" "-n 3"; do
  # shellcheck disable=SC2086
  run --dry-run --assume-gpus 0 $ranks -- ./prog
  expect_status "no GPU, '${ranks:-no -n}': plan made" 0
  expect_contains "no GPU, '${ranks:-no -n}': CPU" "$OUT" "TNT_USE_GPU=false"
  expect_not_contains "no GPU, '${ranks:-no -n}': no GPU warning" "$ERR" "GPU"
  expect_not_contains "no GPU, '${ranks:-no -n}': no warning at all" "$ERR" "WARNING"
done
run --assume-gpus 0 -n 2 -- ./prog
expect_status "no GPU, -n 2, real job: exit 0" 0
expect_contains "no GPU, -n 2, real job: ranks ran on the CPU" "$OUT" "device=false"
expect_not_contains "no GPU, -n 2, real job: no warning" "$ERR" "WARNING"
expect_not_contains "no GPU, -n 2, real job: GPUs not mentioned" "$ERR" "GPU"

# GPUs present but -n asks for more ranks: the user gets told (kept).
run --dry-run --assume-gpus 2 -n 3 -- ./prog
expect_contains "3 ranks, 2 GPUs: warning" "$ERR" "3 ranks per node requested but this node has 2 GPUs"
# GPUs found by the launcher: the ranks use them when their LibTorch can.
run --dry-run --assume-gpus 2 -- ./prog
expect_contains "2 GPUs: ranks decide with auto" "$OUT" "TNT_USE_GPU=auto"

# Explicit requests that cannot be met stop the launch before anything runs.
explicit() {  # NAME MESSAGE ARGS...
  local name=$1 message=$2
  shift 2
  run "$@" -- ./prog
  expect_status "$name: exit status 2" 2
  expect_contains "$name: message" "$ERR" "$message"
  expect_not_contains "$name: nothing ran" "$OUT" "device="
}
explicit "TNT_USE_GPU=true, no GPU" \
  "tarantella: error: -x TNT_USE_GPU=true asks for a GPU on every rank, but this node has no GPU (\`nvidia-smi -L\` lists none): drop -x TNT_USE_GPU=true to train on the CPU" \
  --assume-gpus 0 -n 2 -x TNT_USE_GPU=true
explicit "TNT_USE_GPU=1, no GPU, no -n" "-x TNT_USE_GPU=1 asks for a GPU on every rank, but this node has no GPU" \
  --assume-gpus 0 -x TNT_USE_GPU=1
explicit "TNT_USE_GPU=true, too few GPUs" \
  "-x TNT_USE_GPU=true asks for a GPU on every rank, but 3 ranks per node are requested and this node has 2 GPUs: start at most 2 ranks per node" \
  --assume-gpus 2 -n 3 -x TNT_USE_GPU=true
explicit "TNT_USE_GPU=yes with --no-gpu" "-x TNT_USE_GPU=yes asks for a GPU on every rank and --no-gpu for none: drop one" \
  --assume-gpus 2 --no-gpu -x TNT_USE_GPU=yes
explicit "TNT_USE_GPU not a boolean" "-x TNT_USE_GPU='maybe' is not a boolean: use true" \
  --assume-gpus 2 -x TNT_USE_GPU=maybe

# Requests that can be met, or that ask for the CPU, go ahead silently.
run --dry-run --assume-gpus 2 -x TNT_USE_GPU=true -- ./prog
expect_status "TNT_USE_GPU=true, 2 GPUs: plan made" 0
expect_contains "TNT_USE_GPU=true, 2 GPUs: one rank per GPU" "$OUT" "-np 2"
expect_contains "TNT_USE_GPU=true, 2 GPUs: the demand reaches the ranks" "$OUT" "TNT_USE_GPU=true"
run --assume-gpus 0 -n 2 -x TNT_USE_GPU=false -- ./prog
expect_status "TNT_USE_GPU=false: runs" 0
expect_not_contains "TNT_USE_GPU=false: silent" "$ERR" "WARNING"

# Asked for the CPU, the program sees no GPU: its own device lines
# (`torch.cuda.is_available()`) choose the CPU, as the engine does. A
# CUDA_VISIBLE_DEVICES the user gives with -x stays.
printf '#!/bin/sh\necho "visible=${CUDA_VISIBLE_DEVICES-unset}."\n' >visible && chmod +x visible
for flags in "--no-gpu" "-x TNT_USE_GPU=false"; do
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=0,1 run --assume-gpus 2 -n 2 $flags -- ./visible
  expect_status "$flags: runs" 0
  expect_contains "$flags: GPUs hidden from the program" "$OUT" "visible=."
done
CUDA_VISIBLE_DEVICES=0,1 run --assume-gpus 2 -n 2 --no-gpu -x CUDA_VISIBLE_DEVICES=1 -- ./visible
expect_contains "--no-gpu with the user's -x CUDA_VISIBLE_DEVICES: kept" "$OUT" "visible=1."
CUDA_VISIBLE_DEVICES=0,1 run --assume-gpus 2 -n 2 -- ./visible
expect_contains "GPUs used: CUDA_VISIBLE_DEVICES as it was" "$OUT" "visible=0,1."

# The rank's own check: the launcher believes in a GPU (--assume-gpus 1),
# LibTorch sees none. Only where no GPU is installed (a CUDA node would train).
if [ -n "$LENET5" ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  run --assume-gpus 1 -n 1 -x TNT_USE_GPU=true -- "$LENET5" --epochs 1 --train-size 64 \
    --val-size 0 --test-size 64 --batch-size 64
  expect_failure_status "rank without a GPU refuses TNT_USE_GPU=true"
  expect_contains "rank names the demand and the fix" "$ERR" \
    "TNT_USE_GPU=true asks for a GPU, but LibTorch sees none"
  expect_contains "rank says how to train on the CPU" "$ERR" "set TNT_USE_GPU=false to train on the CPU"
  expect_not_contains "rank did not train" "$OUT" "test accuracy"
  # With auto (what the launcher exports when it finds GPUs) the rank follows
  # its LibTorch build: the CPU here, without complaint.
  run --assume-gpus 1 -n 1 -- "$LENET5" --epochs 1 --train-size 64 --val-size 0 --test-size 64 \
    --batch-size 64
  expect_status "auto on a CPU LibTorch trains" 0
  expect_contains "auto on a CPU LibTorch trains to the end" "$OUT" "test accuracy"
fi

finish
