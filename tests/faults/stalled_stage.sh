#!/usr/bin/env bash
# Usage: stalled_stage.sh LAUNCHER RANKS RANK PROGRAM [ARGS...]
# A rank of a pipelined model (PROGRAM: 2 stages, RANKS / 2 pipelines)
# that stops responding mid-step (SIGSTOP) ends the job within 10 s when
# TNT_COMM_TIMEOUT=5, with a message naming that rank, its stage and its
# pipeline ("rank 3 (stage 1 of 2, pipeline 1)"), by its rank in the job,
# whichever of the model's groups (its pipeline, its stage's replicas) the
# waiting rank noticed it in. PROGRAM prints a line starting with
# "Epoch 1/" once it is running.
set -u
launcher=$1; ranks=$2; victim=$3; program=$4; shift 4
fail() { echo "FAIL: $*"; [ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null; exit 1; }
# shellcheck source=stall_job.sh
. "$(dirname "$0")/stall_job.sh"
stall_job "$launcher" "$ranks" "$victim" "$program" "$@"
stage=$((victim % 2)); pipeline=$((victim / 2))
grep -qE "rank $victim \((on host [^)]*, )?stage $stage of 2, pipeline $pipeline\)" "$log" \
  || fail "no message names rank $victim as stage $stage of 2, pipeline $pipeline"
echo "PASS: rank $victim (stage $stage, pipeline $pipeline) stopped; the job ended after ${elapsed} s (status $job_status), naming it"
