#!/usr/bin/env bash
# shellcheck disable=SC2317  # plan_* and on_signal are called indirectly
# The GPU-machine recipe: configure against the torch found on the machine,
# build what the checks need with every core, run the checks and the
# benchmarks, most informative first, and keep one report up to date
# (docs/performance.md, "GPU", takes its rows from it).
#
#   scripts/device-check.sh [--deadline SECONDS] OUT_DIR
#
# --deadline   the whole run's time (default 360): each step gets the smaller
#              of its own limit and the time left; steps the deadline leaves
#              out read "not run (deadline)". Sized for 16 cores: the run
#              tool's timeout should be the deadline plus 30 s.
#
# Made for the GPU machines we borrow (shared/GPU.md: Ubuntu 24.04, torch
# 2.11.0+cu130 with its python3 first in PATH, CUDA 13.0, OpenMPI 4.1.6, 16
# cores, no network), but it needs no GPU to run: without one the GPU steps
# read "skipped (no GPU)". Dry run with a pip torch first in PATH:
#   PATH=/opt/tnt-venvs/torch-2.15.0/bin:$PATH TNT_DEVICE_BUILD=/tmp/dc-build \
#     scripts/device-check.sh --deadline 90 /tmp/dc-out
#
# It installs nothing. Every step runs in a session of its own (setsid), so
# that its time limit, or SIGTERM/SIGINT to this script, ends the whole step
# (builds, mpirun and its ranks): TERM to every process of the session, KILL
# 3 s later. After a signal the report is written and the exit status is
# 128 + the signal's number. A failed step is reported and the script goes
# on, so one run says as much as it can.
#
# OUT_DIR gets report.md, rewritten after every step: a header (host, GPU,
# python, torch, compiler, cmake, commit), one row per step
# `| step | seconds | result | command |` with result ok, FAILED, TIMEOUT,
# skipped or not run, then the figures pulled out of the logs; beside it
# logs.tar.gz, every step's log (the run tool brings back at most 8 files).
# Large files (data sets, weights, backups) go to the scratch folder, never
# to OUT_DIR. Exit status: 0 when every step was ok or
# skipped.
#
# TNT_DEVICE_PYTHON   the interpreter whose torch to build against (default:
#                     python3 from PATH)
# TNT_DEVICE_BUILD    the build folder (default: build-device); a second run
#                     on the same machine reuses it
# TNT_DEVICE_STEPS    which steps to run (default: all), e.g. "configure build"
# TNT_DEVICE_SCRATCH  the folder for large files (default: a new folder under
#                     /tmp, removed at the end)
# TNT_DEVICE_NCCL     TNT_WITH_NCCL for configure (default: ON with a CUDA
#                     torch, so that a missing NCCL fails loudly; OFF for a
#                     rerun that builds without it: AUTO finds the wheel's
#                     NCCL and is ON there). Such a rerun names configure
#                     in TNT_DEVICE_STEPS.
#
# Steps, in this order:
#   configure           cmake; -DTNT_WITH_NCCL=ON when the torch is a CUDA build
#   build               only the targets the GPU steps need, going on past a
#                       failed one
#   cuda_tests          ctest -L cuda: the NCCL backend at 1 rank (every
#                       collective, the abort path); skipped while a GPU is
#                       present is FAILED
#   gpu_lenet5          bench/gpu/lenet5_checks.sh: CUDA = CPU, NCCL = MPI at 1
#                       rank, deterministic 2 ranks sharing the GPU = 1 rank
#                       (bitwise), every rank's device
#   gpu_stages          tests/mpi pipeline suite at 2 ranks sharing the GPU
#   gpu_python          bench/gpu/device_probe.py at 2 ranks sharing the GPU:
#                       fit from host data and from data on the GPU, model(x),
#                       get_weights() on the CPU, the current CUDA device (the
#                       Python front end's GPU promises, without pytest)
#   resnet_python       bench/gpu/resnet_overhead.py: tnt.Model.fit against
#                       plain PyTorch fed by a DataLoader, fp32 and fp16
#   resnet_cpp_none, resnet_cpp_float16
#                       the C++ tnt::Model::fit (bench/scaling) on ResNet-18
#   gpu_backups         bench/checkpoint/background_backup.py, model on the GPU
#   python_tests        bench/gpu/python_suite.sh: the pytest suite at 1 rank
#                       and at 2 sharing the GPU (pipeline tests too), with
#                       the GPU visible; pytest from .device/pytest where the
#                       interpreter has none (scripts/device-pytest.sh makes
#                       it here; the run tool carries it: carry [".device"]);
#                       no pytest at all is FAILED where a GPU is present
#   build_tests         the test programs of gpu_resume and unit_tests (built
#                       late: a first call rarely reaches them)
#   gpu_resume          mpi_dp_test's BackupAndRestore tests at 2 ranks sharing
#                       the GPU: resumed with dropout, bitwise
#   gpu_stages4         gpu_stages's suite at 4 ranks sharing the GPU: 2 stages x 2
#                       replicas, 4 stages (a middle stage), a sharded
#                       optimizer inside a stage, the resume at another layout
#   unit_tests          ctest -L unit with the GPU visible (not the layering.* source checks)
#   nccl_two_ranks      the NCCL test at 2 ranks on the one GPU, each rank
#                       told it is on a host of its own (NCCL_HOSTID: NCCL
#                       refuses two ranks on one GPU of one host), so that
#                       NCCL runs its kernels and its network transport
#                       (sockets over lo): the grouped calls, an average's
#                       division, the asynchronous path; not the tests that
#                       mean a GPU per rank (EachRankTrainsOnAGpuOfItsOwn)
#                       or abort a stuck collective. Last (a full run reaches
#                       it with --deadline 540): a first run on a machine
#                       may show whether NCCL accepts this at all
#
# TNT_DEVICE_PYTEST   a folder holding pytest (default: .device/pytest), used
#                     when the interpreter cannot import pytest
set -uo pipefail
set +m  # no job control: a step's `setsid` then makes its session in place

usage() {
  echo "usage: scripts/device-check.sh [--deadline SECONDS] OUT_DIR" >&2
  exit 2
}
deadline=360
while [ $# -gt 0 ]; do
  case $1 in
    --deadline) [ $# -ge 2 ] || usage; deadline=$2; shift 2 ;;
    --deadline=*) deadline=${1#*=}; shift ;;
    -h | --help) sed -n '3,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage
if ! [[ $deadline =~ ^[0-9]+$ ]] || [ "$deadline" -lt 10 ]; then
  echo "device-check: --deadline takes whole seconds, at least 10" >&2
  exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
py=${TNT_DEVICE_PYTHON:-$(command -v python3)}
# pytest for the python_tests step: the interpreter's own, else a folder
# made by scripts/device-pytest.sh (the GPU machines have none).
pytest_dir="" pytest_line="none"
if "$py" -c 'import pytest' 2>/dev/null; then
  pytest_line="$("$py" -c 'import pytest; print(pytest.__version__)' 2>/dev/null) (the interpreter's)"
elif [ -f "${TNT_DEVICE_PYTEST:-$root/.device/pytest}/pytest/__init__.py" ]; then
  pytest_dir=${TNT_DEVICE_PYTEST:-$root/.device/pytest}
  pytest_line="from $pytest_dir"
fi
build=${TNT_DEVICE_BUILD:-$root/build-device}
steps=${TNT_DEVICE_STEPS:-all}
report=$out/report.md
jobs=$(nproc)
start=$(date +%s)
end_at=$((start + deadline))
reserve=4   # seconds kept back at the deadline: stopping a step, the report
min_step=5  # a step gets at least this much, or does not start

# OpenMPI's shared-memory single copy (CMA) needs ptrace rights that many
# containers lack ("Read -1, expected ..., errno = 1" at the first 2-rank
# message): copy in and out instead. mpirun hands OMPI_MCA_* to its ranks.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
# A step stopped at its limit keeps what Python printed before.
export PYTHONUNBUFFERED=1
# The driver's tools where a container mounts them (the launcher counts GPUs
# with nvidia-smi).
[ -d /usr/local/nvidia/bin ] && export PATH=$PATH:/usr/local/nvidia/bin

if [ -n "${TNT_DEVICE_SCRATCH:-}" ]; then
  scratch=$TNT_DEVICE_SCRATCH own_scratch=0
  mkdir -p "$scratch" || exit 2
else
  scratch=$(mktemp -d /tmp/tnt-device.XXXXXX) || exit 2
  own_scratch=1
fi
# The steps' logs, packed into OUT_DIR/logs.tar.gz with every report: the
# run tool brings back at most 8 files from its OUT folder.
logs=$scratch/logs
rm -rf "$logs"
mkdir -p "$logs" || exit 2

all_steps=(configure build cuda_tests gpu_lenet5 gpu_stages gpu_python resnet_python resnet_cpp_none
           resnet_cpp_float16
           gpu_backups python_tests build_tests gpu_resume gpu_stages4 unit_tests nccl_two_ranks)
declare -A result took
for s in "${all_steps[@]}"; do result[$s]="not run"; took[$s]=""; done

now() { date +%s; }
wanted() { [ "$steps" = all ] || [[ " $steps " == *" $1 "* ]]; }

# A GPU on the machine (whatever torch makes of it).
gpu_present=0
if [[ $(nvidia-smi -L 2>/dev/null) == GPU* ]] || [ -e /dev/nvidia0 ]; then
  gpu_present=1
fi

# ---- the sessions the steps run in -----------------------------------------
cur_step="" cur_sid="" cur_t0=0

# From /proc, not ps: a minimal image may lack procps, and then a step's
# stray processes would outlive it. /proc/PID/stat: "PID (COMM) STATE PPID
# PGRP SESSION ...", COMM possibly with blanks and parentheses.
stat_fields() {  # stat_fields PID: STATE PPID PGRP SESSION ... of a live process
  local line
  { IFS= read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  echo "${line##*) }"
}
session_members() {  # the live processes of session $1 (with zombies: session_members SID all)
  local f pid state sid
  for f in /proc/[0-9]*; do
    pid=${f#/proc/}
    read -r state _ _ sid _ <<<"$(stat_fields "$pid")" || continue
    [ "$sid" = "$1" ] || continue
    [ -n "${2:-}" ] || [ "$state" != Z ] || continue
    echo "$pid"
  done
}

# Ends every process of session $1: TERM, then KILL after 3 s; then gives
# their new parent up to 1 s to reap the zombies (tidy `pgrep` checks).
# shellcheck disable=SC2086  # $pids: a list of numbers
stop_session() {
  local sid=$1 pids _
  # Before its setsid(), the leader (still this script's child) is not a group yet.
  [ "$(stat_fields "$sid" | awk '{print $2}')" = $$ ] && kill -TERM "$sid" 2>/dev/null
  kill -TERM -- "-$sid" 2>/dev/null
  pids=$(session_members "$sid")
  [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
  for _ in $(seq 30); do
    pids=$(session_members "$sid")
    [ -z "$pids" ] && break
    sleep 0.1
  done
  if [ -n "$pids" ]; then
    kill -KILL -- "-$sid" 2>/dev/null
    kill -KILL $pids 2>/dev/null
    for _ in $(seq 20); do
      pids=$(session_members "$sid")
      [ -z "$pids" ] && break
      sleep 0.1
    done
    [ -n "$pids" ] && echo "device-check: processes of session $sid survived SIGKILL: $pids" >&2
  fi
  for _ in $(seq 10); do
    [ -z "$(session_members "$sid" all)" ] && return 0
    sleep 0.1
  done
}

# run_limited LIMIT LOG COMMAND...: COMMAND in a session of its own, its
# output in LOG, for at most LIMIT seconds. Sets run_rc (124: timed out).
run_limited() {
  local limit=$1 log=$2 timed_out=0
  shift 2
  cur_t0=$(now)
  setsid "$@" >"$log" 2>&1 </dev/null &
  cur_sid=$!
  while kill -0 "$cur_sid" 2>/dev/null; do
    if [ $(($(now) - cur_t0)) -ge "$limit" ]; then
      timed_out=1
      echo "device-check: time limit of $limit s reached, stopping the step" >>"$log"
      stop_session "$cur_sid"
      break
    fi
    sleep 0.5 &
    wait $!  # a signal's trap runs at once here
  done
  wait "$cur_sid"
  run_rc=$?
  stop_session "$cur_sid"  # whatever the step left behind
  cur_sid=""
  [ $timed_out = 1 ] && run_rc=124
  return 0
}

# ---- the report ------------------------------------------------------------
header=""
compiler_line() {
  local cxx
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
  cxx=${cxx:-${CXX:-c++}}
  echo "$cxx: $("$cxx" --version 2>/dev/null | head -n 1)"
}
make_header() {
  local commit dirty=""
  # The GPU machine gets a copy of the working tree without .git: the run
  # names the commit (TNT_DEVICE_COMMIT).
  commit=${TNT_DEVICE_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
  if [ "$commit" != unknown ] && git -C "$root" rev-parse --git-dir >/dev/null 2>&1 &&
     ! git -C "$root" diff --quiet HEAD -- 2>/dev/null; then
    dirty=" (with uncommitted changes)"
  fi
  header="- host: $(hostname), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | paste -sd';' | grep . || echo "none seen by nvidia-smi")$([ $gpu_present = 1 ] && echo " (present)")
- python: $py
- torch: ${torch_line:-unknown}
- NCCL backend: ${nccl_line:-not configured yet}
- compiler: $(compiler_line)
- cmake: $(cmake --version 2>/dev/null | head -n 1)
- pytest: $pytest_line
- commit: $commit$dirty
- deadline: $deadline s; build: $build; scratch: $scratch"
}

declare -A cmdline
cell() { printf '%s' "$1" | sed 's/|/\\|/g'; }

figures() {
  echo
  echo "## Checks (bench/gpu/lenet5_checks.sh)"
  echo
  grep -h '^PASS\|^FAIL' "$logs/gpu_lenet5.log" 2>/dev/null | sed 's/^/- /'
  echo
  echo "## ResNet-18, batch 128, one rank"
  echo
  if grep -q '^| ResNet-18' "$logs/resnet_python.log" 2>/dev/null; then
    sed -n '/^| ResNet-18/,$p' "$logs/resnet_python.log"
  else  # cut short: the precisions it finished
    grep -h '^RESULT ' "$logs/resnet_python.log" 2>/dev/null | sed 's/^/- /'
  fi
  for precision in none float16; do
    [ -f "$logs/resnet_cpp_$precision.log" ] || continue
    "$py" - "$logs/resnet_cpp_$precision.log" "$precision" <<'PYEOF' 2>/dev/null
import json, sys
for line in open(sys.argv[1], errors="replace"):
    if line.startswith("RESULT "):
        r = json.loads(line[7:])
        steps = r["step_ms"][10:]
        print(f"- C++ tnt::Model::fit ({sys.argv[2]}): {sum(steps) / len(steps):.2f} ms/step "
              f"(mean of {len(steps)} steps after 10 warm-up)")
PYEOF
  done
  echo
  echo "## Background backups of a model on the GPU (bench/checkpoint/background_backup.py)"
  echo
  sed -n '/^| [0-9]* steps, backup/,$p' "$logs/gpu_backups.log" 2>/dev/null
}

write_report() {
  local s
  {
    echo "# device-check, $(date -u -d "@$start" +%Y-%m-%dT%H:%MZ)"
    echo
    echo "$header"
    echo
    echo "| step | seconds | result | command |"
    echo "|---|---|---|---|"
    for s in "${all_steps[@]}"; do
      # shellcheck disable=SC2016  # the backquotes are Markdown's
      printf '| %s | %s | %s | `%s` |\n' "$s" "${took[$s]:-–}" "$(cell "${result[$s]}")" \
        "$(cell "${cmdline[$s]:-}")"
    done
    figures
    echo
    echo "Written at +$(($(now) - start)) s of the run; every step's log in logs.tar.gz beside"
    echo "this file (tar -xzf logs.tar.gz)."
  } >"$report.tmp" && mv -f "$report.tmp" "$report"
  tar -czf "$out/logs.tar.gz.tmp" -C "$logs" . 2>/dev/null && mv -f "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
}

finish() {  # finish EXIT_STATUS
  local s bad=0
  for s in "${all_steps[@]}"; do
    case ${result[$s]} in ok* | skipped*) ;; *) bad=1 ;; esac
  done
  write_report
  [ $own_scratch = 1 ] && rm -rf "$scratch"
  # The report on stdout too: the run tool's output tail carries it even
  # where files do not come back.
  echo
  cat "$report"
  echo "device-check: report in $report, logs in $out/logs.tar.gz ($(($(now) - start)) s)"
  [ "$1" = auto ] && exit $bad
  exit "$1"
}

on_signal() {
  local sig=$1 s code
  trap '' TERM INT HUP
  echo "device-check: SIG$sig: stopping${cur_step:+ $cur_step}" >&2
  if [ -n "$cur_step" ]; then
    [ -n "$cur_sid" ] && stop_session "$cur_sid"
    took[$cur_step]=$(($(now) - cur_t0))
    result[$cur_step]="FAILED (stopped by SIG$sig)"
    cur_step="" cur_sid=""
  elif [ -n "$cur_sid" ]; then
    stop_session "$cur_sid"
    cur_sid=""
  fi
  for s in "${all_steps[@]}"; do
    case ${result[$s]} in "not run" | FAILED\ \(unfinished*) result[$s]="not run (stopped)" ;; esac
  done
  case $sig in INT) code=130 ;; HUP) code=129 ;; *) code=143 ;; esac
  finish "$code"
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
trap 'on_signal HUP' HUP
# Whatever else ends the script: no step left running.
trap '[ -n "$cur_sid" ] && stop_session "$cur_sid"' EXIT

# step NAME LIMIT SKIP [NEED]: runs plan_NAME's command, its log in
# NAME.log (in logs.tar.gz); SKIP is empty, or why the step is skipped. NEED (default
# min_step): the seconds below which the step does not start (a run cut
# short would read as a hang), leaving them to the shorter steps after it.
step() {
  local name=$1 limit=$2 skip=$3 need=${4:-$min_step} left t0 c
  "plan_$name"
  cmdline[$name]="${c[*]}"
  if ! wanted "$name"; then
    result[$name]="skipped (not in TNT_DEVICE_STEPS)"
    write_report
    return 0
  fi
  left=$((end_at - $(now) - reserve))
  if [ $left -lt "$need" ]; then
    result[$name]="not run (deadline: $((left < 0 ? 0 : left)) s left, needs $need)"
  elif [ -n "$skip" ]; then
    result[$name]="skipped ($skip)"
  fi
  if [ $left -lt "$need" ] || [ -n "$skip" ]; then
    echo "device-check: $name: ${result[$name]}"
    write_report
    return 0
  fi
  [ $left -lt "$limit" ] && limit=$left
  cur_step=$name
  result[$name]="FAILED (unfinished: running when this report was written, limit $limit s)"
  write_report
  echo "device-check: $name (limit $limit s)"
  t0=$(now)
  run_limited "$limit" "$logs/$name.log" "${c[@]}"
  took[$name]=$(($(now) - t0))
  if [ $run_rc = 124 ]; then
    result[$name]="TIMEOUT (limit $limit s)"
  elif [ $run_rc != 0 ]; then
    result[$name]="FAILED (exit $run_rc)"
  else
    result[$name]=ok
  fi
  cur_step=""
  echo "device-check: $name: ${result[$name]} (${took[$name]} s)"
  write_report
}
ran_ok() { [ "${result[$1]}" = ok ]; }
# Configured: by this run, or earlier when TNT_DEVICE_STEPS leaves configure out.
configured() { ran_ok configure || { ! wanted configure && [ -f "$build/CMakeCache.txt" ]; }; }

# ---- what torch is this ----------------------------------------------------
make_header
write_report
run_limited 60 "$logs/torch.log" "$py" -c '
import torch
print("PREFIX", torch.utils.cmake_prefix_path)
print("CUDA", torch.version.cuda or "none")
print("LINE", torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "")'
prefix=$(sed -n 's/^PREFIX //p' "$logs/torch.log")
torch_cuda=$(sed -n 's/^CUDA //p' "$logs/torch.log")
torch_line=$(sed -n 's/^LINE //p' "$logs/torch.log")
if [ -z "$prefix" ]; then
  torch_line="$py cannot import torch (set TNT_DEVICE_PYTHON): $(tail -n 1 "$logs/torch.log")"
fi
make_header
write_report

# ---- the steps, most informative first -------------------------------------
generator=() keep_going=(-k)
command -v ninja >/dev/null && generator=(-G Ninja) keep_going=(-k 0)
nccl=(-DTNT_WITH_NCCL=AUTO)
[ -n "$torch_cuda" ] && [ "$torch_cuda" != none ] && nccl=(-DTNT_WITH_NCCL=ON)
[ -n "${TNT_DEVICE_NCCL:-}" ] && nccl=(-DTNT_WITH_NCCL="$TNT_DEVICE_NCCL")
# What the steps below use, not the whole tree (no examples, no multi-rank
# test programs, no launcher CLI tests: they need no GPU). With Ninja, only
# the targets the configuration has (nccl_backend_test comes with NCCL).
targets=(tarantella tnt_launcher tnt_python nccl_backend_test bench_scaling mpi_pipeline_test)
# The test programs of the last steps, built after the GPU checks.
test_targets=(unit_tests data_unit_tests p2p_unit_tests mpi_dp_test)
launcher=$build/bin/tarantella
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}

# plan_STEP: sets c to the step's command.
plan_configure() {
  c=(cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_PREFIX_PATH="$prefix" -DTNT_PYTHON_EXECUTABLE="$py" -DTNT_BUILD_BENCHMARKS=ON
     "${nccl[@]}")
}
plan_build() {
  c=(cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- "${keep_going[@]}")
}
plan_build_tests() {
  c=(cmake --build "$build" -j "$jobs" --target "${test_targets[@]}" -- "${keep_going[@]}")
}
plan_cuda_tests() {
  # Verbose: a test stopped by the step's limit still shows how far it came
  # (the tests' own limits, tests/cuda/CMakeLists.txt, fit in the step's).
  c=(ctest --test-dir "$build" -L cuda --no-tests=error -V)
}
plan_nccl_two_ranks() {
  # shellcheck disable=SC2016  # $OMPI_COMM_WORLD_RANK: each rank's own
  c=("$launcher" -n 2 --ranks-per-gpu 2 --output-on-all-devices -x TNT_COMM_BACKEND=nccl
     -x TNT_COMM_TIMEOUT=20 -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1
     -x NCCL_MNNVL_ENABLE=0 -x NCCL_DEBUG=WARN -- sh -c
     'NCCL_HOSTID=tnt-device-check-$OMPI_COMM_WORLD_RANK exec "$0" "$@"'
     "$build/tests/cuda/nccl_backend_test"
     "--gtest_filter=-NcclBackend.EachRankTrainsOnAGpuOfItsOwn:NcclBackend.StuckCollectiveIsAbortedAndNamed")
}
plan_gpu_lenet5() {
  c=(bash "$root/bench/gpu/lenet5_checks.sh" "$launcher" "$py" "$scratch/lenet5" "$logs/lenet5")
}
# Pipeline stages with CUDA tensors (the split backward, transfers between
# stages): the C++ pipeline suite at 2 ranks sharing the GPU, host-staged
# (NCCL refuses two ranks on one device), against the whole model alone on
# the same GPU, within 1e-5 and bitwise in deterministic mode.
plan_gpu_stages() {
  c=("$launcher" -n 2 --ranks-per-gpu 2 -x TNT_USE_GPU=true -x TNT_COMM_TIMEOUT=20 --
     "$build/tests/mpi/mpi_pipeline_test")
}
# The same at 4 ranks: what 2 cannot show (stages x replicas, a middle
# stage, shards within a stage, the 4-rank resume at another layout).
plan_gpu_stages4() {
  c=("$launcher" -n 4 --ranks-per-gpu 4 -x TNT_USE_GPU=true -x TNT_COMM_TIMEOUT=20 --
     "$build/tests/mpi/mpi_pipeline_test")
}
# Resuming from a backup with dropout, bitwise (the GPU's generator is in
# the backup), and deterministic mode's resume at one rank fewer: the C++
# tests at 2 ranks sharing the GPU.
plan_gpu_resume() {
  c=("$launcher" -n 2 --ranks-per-gpu 2 -x TNT_USE_GPU=true -x TNT_COMM_TIMEOUT=20 --
     "$build/tests/mpi/mpi_dp_test"
     "--gtest_filter=BackupAndRestore.*:Callbacks.Resume*")
}
plan_resnet_python() {
  c=("$launcher" -n 1 -- "$py" "$root/bench/gpu/resnet_overhead.py" --steps 25 --warmup 10)
}
# The C++ front end on the same network and batch: 35 steps, the first 10
# warm-up (the GPU is synchronised before step 10; the report's mean drops
# the ones before).
plan_resnet_cpp() {
  c=("$launcher" -n 1 -- "$build/bench/scaling/bench_scaling" --variant tnt --model resnet18
     --image-size 224 --classes 1000 --momentum 0.9 --batch-size 128 --steps 35
     --distinct-batches 4 --warmup 10 --mixed-precision "$1")
}
plan_resnet_cpp_none() { plan_resnet_cpp none; }
plan_resnet_cpp_float16() { plan_resnet_cpp float16; }
plan_gpu_python() {
  c=("$launcher" -n 2 --ranks-per-gpu 2 --output-on-all-devices -- "$py"
     "$root/bench/gpu/device_probe.py" --expect cuda:0)
}
# Background backups of a model on the GPU: the snapshot goes to pinned
# memory without waiting, the writer waits for the copies (one round, the
# 134 MB model of the CPU figure, on the machine's disk). A GPU step takes
# about a millisecond: backups 150 steps apart, so that one write is over
# before the next backup (the bench says when it is not).
plan_gpu_backups() {
  c=("$launcher" -n 1 -- "$py" "$root/bench/checkpoint/background_backup.py" --steps 300
     --save-freq 150 --rounds 1 --dir "$scratch/backup-bench")
}
# The build's resource file gives the suite 2 core slots (a 2-core CI
# machine's claims, cmake/TntTestCores.cmake); here every core is a slot, so
# that -j "$jobs" runs that many one-process unit tests at once.
plan_unit_tests() {
  printf '{"version": {"major": 1, "minor": 0},\n "local": [{"cores": [{"id": "machine", "slots": %s}]}]}\n' \
    "$jobs" >"$scratch/ctest-cores.json"
  # Not the layering.* checks: they read sources and binaries, need no GPU,
  # and libstdcxx_first names a binary this recipe does not build (lenet5);
  # the pip suite runs them on the CPU. The unit-labelled suites of binaries
  # not in the targets above (data_image_tests, callbacks_io_unit_tests:
  # nothing on the GPU) are left out here, as ctest leaves out their
  # unlabelled NOT_BUILT placeholders.
  # Two threads per test (as on CI's cores), not every core per test times
  # $jobs tests: the few timed waits in the suite assume no more than that.
  c=(env OMP_NUM_THREADS=2 ctest --test-dir "$build" -L unit -E '^layering\.' -j "$jobs"
     --resource-spec-file "$scratch/ctest-cores.json" --output-on-failure)
}
# The pytest suite at 1 rank and at 2 sharing the GPU, pipeline tests too
# (bench/gpu/python_suite.sh); pytest from .device/pytest where the
# interpreter has none.
plan_python_tests() {
  c=(bash "$root/bench/gpu/python_suite.sh" "$launcher" "$py" "$root/tests/python" ${pytest_dir:+"$pytest_dir"})
}
for s in "${all_steps[@]}"; do
  "plan_$s"
  cmdline[$s]="${c[*]}"
done
write_report

# stale TARGET: after a build of this run that failed somewhere, whether
# ninja would still rebuild TARGET (a rerun on a kept build tree must not
# test the binaries of an earlier run as if they were this commit's).
build_failed() {  # a build step of this run (build, build_tests) that ran and failed
  local s
  for s in build build_tests; do
    [ -n "${took[$s]}" ] && [ "${result[$s]}" != ok ] && return 0
  done
  return 1
}
stale() {
  [ ${#generator[@]} != 0 ] && build_failed || return 1
  [[ $(ninja -C "$build" -n "$1" 2>/dev/null) != *"no work to do"* ]]
}
missing() {  # missing WHAT...: the first one not built (or not rebuilt), else nothing
  local f
  for f in "$@"; do
    case $f in
      python) compgen -G "$build/python/tarantella/_tarantella*.so" >/dev/null ||
                { echo "the Python module"; return; }
              stale tnt_python && { echo "the Python module (out of date: the build failed)"; return; } ;;
      *) [ -x "$f" ] || { echo "${f#"$build"/}"; return; }
         stale "${f#"$build"/}" && { echo "${f#"$build"/} (out of date: the build failed)"; return; } ;;
    esac
  done
}
# gpu_step NAME LIMIT NEEDS [NEED]: a step that needs a GPU and what NEEDS
# names (space-separated, see missing()); NEED as for step.
# shellcheck disable=SC2086  # $needs: a list
gpu_step() {
  local m=""
  if [ $gpu_present = 0 ]; then
    m="no GPU on this machine"
  elif m=$(missing $3) && [ -n "$m" ]; then
    m="not built: $m"
  fi
  step "$1" "$2" "$m" "${4:-$min_step}"
  # On the machine these steps are for, a step that could not run for want
  # of a target is a failure, not a skip (configure may leave the Python
  # module out with only a warning).
  if [[ ${result[$1]} == "skipped (not built"* ]]; then
    result[$1]="FAILED (${result[$1]#skipped (}"
    write_report
  fi
}

no_torch=""
[ -z "$prefix" ] && no_torch="no torch for $py"
step configure 90 "$no_torch"
nccl_line=$(sed -n 's/.*Tarantella: NCCL backend //p' "$logs/configure.log" 2>/dev/null | head -n 1)
# A rerun that does not configure: what the kept build tree has.
if [ -z "$nccl_line" ] && [ -f "$build/CMakeCache.txt" ]; then
  if grep -q '^TNT_NCCL_LIBRARY:FILEPATH=/' "$build/CMakeCache.txt" &&
     [ -f "$build/build.ninja" ] && grep -q 'nccl_backend_test' "$build/build.ninja"; then
    nccl_line="ON (configured earlier: $(sed -n 's/^TNT_NCCL_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt"))"
  else
    nccl_line="OFF (configured earlier)"
  fi
fi
make_header

not_configured=""
configured || not_configured="configure did not succeed"
if [ -z "$not_configured" ] && [ ${#generator[@]} != 0 ]; then
  known=$(ninja -C "$build" -t targets all 2>/dev/null)
  present=()
  for t in "${targets[@]}"; do
    grep -q "^$t: " <<<"$known" && present+=("$t")
  done
  targets=("${present[@]}")
  present=()
  for t in "${test_targets[@]}"; do
    grep -q "^$t: " <<<"$known" && present+=("$t")
  done
  test_targets=("${present[@]}")
fi
step build 240 "$not_configured"

# The GPU's own tests; they report skipped where no GPU is visible, which is
# a failure where one is present.
no_nccl=$not_configured
# A rerun built without NCCL on purpose (TNT_DEVICE_NCCL=OFF) has no CUDA tests.
[ -z "$no_nccl" ] && [[ $nccl_line == OFF* ]] && [ "${TNT_DEVICE_NCCL:-}" = OFF ] &&
  no_nccl="NCCL backend OFF (TNT_DEVICE_NCCL=OFF): no CUDA tests"
step cuda_tests 100 "$no_nccl"
if [ "${result[cuda_tests]}" = ok ] &&
   grep -Eq '\*\*\*Skipped|Not Run|\(Skipped\)|tests did not run' "$logs/cuda_tests.log"; then
  if [ $gpu_present = 1 ]; then
    result[cuda_tests]="FAILED (the tests report skipped though a GPU is present)"
  else
    result[cuda_tests]="skipped (no GPU: the tests report skipped)"
  fi
  write_report
fi

gpu_step gpu_lenet5 180 "$launcher python" 60
gpu_step gpu_stages 90 "$launcher $build/tests/mpi/mpi_pipeline_test" 40
gpu_step gpu_python 60 "$launcher python" 30
gpu_step resnet_python 120 "$launcher python" 60
gpu_step resnet_cpp_none 60 "$launcher $build/bench/scaling/bench_scaling" 30
gpu_step resnet_cpp_float16 60 "$launcher $build/bench/scaling/bench_scaling" 30
gpu_step gpu_backups 90 "$launcher python" 40
# The Python suite a GPU user runs; with a GPU present, no pytest is a
# failure of the run (scripts/device-pytest.sh), not a skip.
no_pytest=""
[ "$pytest_line" = none ] && no_pytest="no pytest for $py, and no .device/pytest (scripts/device-pytest.sh)"
if [ $gpu_present = 1 ] && [ -n "$no_pytest" ] && wanted python_tests; then
  result[python_tests]="FAILED ($no_pytest)"
  write_report
else
  gpu_step python_tests 150 "$launcher python" 60
fi
step build_tests 180 "$not_configured"
gpu_step gpu_resume 60 "$launcher $build/tests/mpi/mpi_dp_test" 30
gpu_step gpu_stages4 90 "$launcher $build/tests/mpi/mpi_pipeline_test" 40

# Then the C++ suite a GPU user runs, with the GPU visible.
step unit_tests 150 "$not_configured" 60
# ctest runs whatever binaries there are: after a failed build_tests some
# may be an earlier build's.
if [ -n "${took[build_tests]}" ] && [ "${result[build_tests]}" != ok ] &&
   [ -n "${took[unit_tests]}" ]; then
  result[unit_tests]="${result[unit_tests]} (build_tests failed: a test program may be an earlier build's)"
  write_report
fi

# Last: NCCL at 2 ranks on the one GPU, each rank on a host of its own for
# NCCL (NCCL_HOSTID); new, so after everything the issue asks for (a full
# run reaches it with --deadline 540; else name it in TNT_DEVICE_STEPS).
if [ -n "$no_nccl" ] && wanted nccl_two_ranks; then
  result[nccl_two_ranks]="skipped ($no_nccl)"
  write_report
else
  gpu_step nccl_two_ranks 60 "$launcher $build/tests/cuda/nccl_backend_test" 30
fi

finish auto
