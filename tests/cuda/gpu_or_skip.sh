#!/usr/bin/env bash
# Runs a GPU test (COMMAND...) where the machine has a GPU device; reports it
# skipped (exit 77, CTest's SKIP_RETURN_CODE) only where it has none. A GPU
# that torch/CUDA cannot use (a broken driver, a missing library, a CPU-only
# LibTorch, CUDA_VISIBLE_DEVICES hiding it) is a failure, not a skip: the
# step must not say ok on the one machine it is meant for.
#   gpu_or_skip.sh COMMAND...
# The GPU count comes from the host, independent of torch: /dev/nvidia0 or
# `nvidia-smi -L` (TNT_TEST_GPU_PROBE=none|present fixes it, for this
# script's own test).
set -u
[ $# -gt 0 ] || { echo "usage: $0 COMMAND..." >&2; exit 2; }

device=""
case "${TNT_TEST_GPU_PROBE:-}" in
  none) ;;
  present) device="(TNT_TEST_GPU_PROBE=present)" ;;
  *)
    if [ -e /dev/nvidia0 ]; then
      device="/dev/nvidia0"
    fi
    listed=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
    if [ "${listed:-0}" -gt 0 ]; then
      device="${device:+$device, }nvidia-smi -L lists $listed GPU(s)"
    fi
    ;;
esac

if [ -z "$device" ]; then
  echo "SKIP: no GPU device on this machine (no /dev/nvidia0, and nvidia-smi -L lists none)"
  exit 77
fi

log=$(mktemp "${TMPDIR:-/tmp}/tnt-gpu-test.XXXXXX")
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# The runtime's words when LibTorch cannot use a GPU (src/comm/world/backend_choice.cpp,
# src/train/engine/engine_state.cpp), and CUDA's when it finds no usable device.
if [ "$status" -ne 0 ] &&
   grep -qE "this rank trains on the CPU|LibTorch sees (no|none)|no CUDA-capable device|CUDA driver version is insufficient|cudaErrorNoDevice|cudaErrorInsufficientDriver" "$log"; then
  echo "FAIL: this machine has a GPU device ($device), but torch/CUDA cannot use it:" \
       "check the driver (nvidia-smi), CUDA_VISIBLE_DEVICES (now '${CUDA_VISIBLE_DEVICES-unset}')" \
       "and that LibTorch is a CUDA build. Not a skip: a GPU test must run where there is a GPU."
fi
exit "$status"
