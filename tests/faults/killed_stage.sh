#!/usr/bin/env bash
# Usage: killed_stage.sh LAUNCHER RANKS RANK PROGRAM [ARGS...]
# A rank of a pipelined model (PROGRAM: 2 stages, RANKS / 2 pipelines)
# killed mid-step (SIGKILL: an OOM kill) ends the job within 10 s, non-zero,
# with a message naming that rank by its rank in the job, its stage and its
# pipeline, and the signal ("rank 3 (on host h, stage 1 of 2, pipeline 1)
# was killed by signal 9"). PROGRAM prints "Epoch 1/..." once running.
set -u
launcher=$1; ranks=$2; victim=$3; program=$4; shift 4
fail() { echo "FAIL: $*"; [ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null; exit 1; }
# shellcheck source=stall_job.sh
. "$(dirname "$0")/stall_job.sh"
STALL_SIGNAL=KILL stall_job "$launcher" "$ranks" "$victim" "$program" "$@"
stage=$((victim % 2)); pipeline=$((victim / 2))
grep -qE "rank $victim \((on host [^)]*, )?stage $stage of 2, pipeline $pipeline\).*killed by signal 9" "$log" \
  || fail "no message names rank $victim as stage $stage of 2, pipeline $pipeline, killed by signal 9"
echo "PASS: rank $victim (stage $stage, pipeline $pipeline) killed; the job ended after ${elapsed} s (status $job_status), naming it"
