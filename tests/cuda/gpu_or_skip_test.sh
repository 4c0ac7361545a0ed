#!/usr/bin/env bash
# gpu_or_skip.sh on any machine, with the host's GPU probe fixed: a skip
# (77) only without a GPU device; with one, a test that finds no usable GPU
# fails with the reason, and the test's own status passes through.
#   gpu_or_skip_test.sh PATH/TO/gpu_or_skip.sh
set -u
wrap=$1
failures=0
check() {  # NAME EXPECTED_STATUS NEEDLE PROBE COMMAND...
  local name=$1 want=$2 needle=$3 probe=$4 out status
  shift 4
  out=$(TNT_TEST_GPU_PROBE=$probe "$wrap" "$@" 2>&1)
  status=$?
  if [ "$status" -eq "$want" ] && grep -qF -- "$needle" <<<"$out"; then
    echo "PASS: $name"
  else
    echo "FAIL: $name: status $status (expected $want), output:"; echo "$out"
    failures=$((failures + 1))
  fi
}
check "no GPU device: skipped" 77 "SKIP: no GPU device on this machine" none /bin/false
check "a GPU torch cannot use: failed, with the reason" 1 "but torch/CUDA cannot use it" present \
  sh -c 'echo "tarantella: error: rank 0: TNT_COMM_BACKEND=nccl: this rank trains on the CPU"; exit 1'
check "a GPU, the test passes: passed" 0 "ran" present sh -c 'echo ran'
check "a GPU, the test fails otherwise: its status" 3 "other failure" present \
  sh -c 'echo "other failure"; exit 3'
[ "$failures" -eq 0 ]
