#!/usr/bin/env bash
# shellcheck disable=SC2034  # variables named only inside check's conditions
# tarantella inside a real Slurm (Debian's 22.05: munged, slurmctld, one
# slurmd per simulated host; bench/cluster/slurm.sh) on two simulated hosts
# (bench/cluster/cluster.sh). The daemons start once for all checks:
#
#  1. LeNet-5 through --hostfile (no Slurm): the reference weights.
#  2. The same run submitted with sbatch, with the guide's own batch script
#     (examples/slurm/lenet5.sbatch: no -n, no hostfile; mpirun inside the
#     job): 2 ranks, one per host, weights bitwise equal to 1.
#  3. The same run under salloc with --srun (ranks started by srun
#     --mpi=pmix): the same layout and weights, and the network the nodes
#     and the login node share found by the launcher (no network flag).
#  4. An allocation of 3 tasks on 2 nodes gives 3 ranks with local ranks 0,1
#     on the first host and 0 on the second, through mpirun and through
#     srun; -n 4 inside it is one clear error (exit 2).
#  4b. --max-restarts inside a job, through mpirun and srun: a rank that
#     fails on the first attempt, then a restart in the same allocation that
#     tells both ranks TNT_RESTART_COUNT=1, on the same hosts.
#  5. scancel of a running sbatch job: within 10 s no process of the job is
#     left (no rank, wrapper, launcher or mpirun daemon; only slurmd remains
#     in each host).
#
#   slurm.sh TARANTELLA LENET5 CLUSTER_SH SLURM_SH SBATCH_SCRIPT
# Exit status 77 (skipped), with the reason, where namespaces or the Slurm
# daemons cannot run here.
set -u
launcher=${1:?usage: slurm.sh TARANTELLA LENET5 CLUSTER_SH SLURM_SH SBATCH_SCRIPT}
real_lenet5=${2:?}
cluster=${3:?}
slurm=${4:?}
sbatch_script=${5:?}
source "$(dirname "$0")/lib.sh"
# NAME CONDITION: the condition is evaluated here, so it may name the
# caller's local variables (want, got, three: hence SC2034 is off below).
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
# Absolute: the batch job finds them through PATH, from its own directory.
launcher=$(realpath "$launcher") real_lenet5=$(realpath "$real_lenet5")
sbatch_script=$(realpath "$sbatch_script")

need_namespaces
for tool in nsenter munged slurmctld slurmd sbatch salloc srun scancel; do
  command -v "$tool" >/dev/null ||
    skip "$tool is not installed (apt-get install iproute2 util-linux munge slurmctld slurmd slurm-client)"
done
ls /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix*.so >/dev/null 2>&1 ||
  skip "Slurm's PMIx plugin (mpi_pmix) is missing: srun --mpi=pmix cannot start OpenMPI ranks"
stop_services() { "$slurm" down || echo "FAIL: slurm.sh down failed"; }
start_cluster tntsl 10.77.81
"$slurm" up || skip "the Slurm daemons do not start on this machine (see their logs above)"
export "$("$slurm" env)"
unset "${!SLURM_JOB@}" SLURM_NODELIST SLURM_TASKS_PER_NODE SLURM_NTASKS SLURM_STEP_ID SLURM_PROCID

# `lenet5` and `ident` in PATH record where each rank runs; lenet5 then
# becomes the real program. Every process of ours has $work in its command line.
mkdir "$work/bin" "$work/out"
cat >"$work/bin/ident" <<'EOF'
#!/bin/sh
echo "rank=$OMPI_COMM_WORLD_RANK local=$OMPI_COMM_WORLD_LOCAL_RANK size=$OMPI_COMM_WORLD_SIZE host=$(hostname) restart=$TNT_RESTART_COUNT" \
  >"$PROBE_DIR/rank$OMPI_COMM_WORLD_RANK"
EOF
{ cat "$work/bin/ident"; echo "exec $real_lenet5 \"\$@\""; } >"$work/bin/lenet5"
chmod +x "$work/bin/ident" "$work/bin/lenet5"
PATH=$work/bin:$(dirname "$launcher"):$PATH
export PATH
# The login node (where salloc runs the launcher) has other networks than
# the hosts: the launcher must find the one they share by itself.
chosen="tarantella: INFO: network: $TNT_CLUSTER_SUBNET.0/24 (tntsl-br0 on this node), the IPv4 network(s) shared by this node and all 2 host(s)"
lenet5_args=(--epochs 1 --train-size 1024 --test-size 256 --batch-size 64 --verbose 2)

layout() {  # DIR: the ranks' records, one line each, in rank order
  cat "$1"/rank* 2>/dev/null | sort
}
expect_two_hosts() {  # NAME DIR
  local want got
  want=$(printf 'rank=0 local=0 size=2 host=tntsl-h0 restart=0\nrank=1 local=0 size=2 host=tntsl-h1 restart=0')
  got=$(layout "$2")
  check "$1: rank 0 on tntsl-h0, rank 1 on tntsl-h1, local rank 0 each" '[ "$got" = "$want" ]' ||
    echo "got: $got"
}
run_logged() {  # NAME COMMAND...: runs it, shows its output, keeps its status in $status
  local name=$1; shift
  local start=$SECONDS
  "$@" >"$work/out/$name" 2>&1 </dev/null
  status=$?
  echo "--- $name: exit status $status after $((SECONDS - start)) s"; tail -n 4 "$work/out/$name"
}

# 1. The reference: --hostfile through the simulated hosts' remote agent.
mkdir "$work/hostfile"
# shellcheck disable=SC2046  # the flags are words without blanks (cluster.sh checks)
PROBE_DIR=$work/hostfile run_logged hostfile "$launcher" $("$cluster" flags) -x "PROBE_DIR=$work/hostfile" \
  -- lenet5 "${lenet5_args[@]}" --save-weights "$work/hostfile.pt"
check "hostfile run exits 0" '[ "$status" = 0 ]'
expect_two_hosts "hostfile run" "$work/hostfile"

# 2. sbatch with the guide's script, as written.
mkdir "$work/sbatch"
# sbatch --wait polls with growing pauses (up to 30 s here); scontrol is asked
# every 0.2 s instead, for the job's end and its exit code.
sbatch_and_wait() {  # ARGS...: prints the job's exit code
  local job info
  job=$(sbatch --parsable "$@") || return 1
  while info=$(scontrol show job -o "$job" 2>/dev/null) &&
        grep -qE "JobState=(PENDING|CONFIGURING|RUNNING|COMPLETING)" <<<"$info"; do
    sleep 0.2
  done
  echo "job $job: $(grep -oE "JobState=[A-Z_]+ .*ExitCode=[0-9:]+" <<<"$info" | sed 's/ .* / /')"
  grep -q "ExitCode=0:0" <<<"$info"
}
PROBE_DIR=$work/sbatch run_logged sbatch sbatch_and_wait --chdir="$work" --output="$work/out/sbatch.job" \
  "$sbatch_script" --save-weights "$work/sbatch.pt"
cat "$work/out/sbatch.job" 2>/dev/null | tail -n 3
check "sbatch job exits 0" '[ "$status" = 0 ]'
check "sbatch job trained 2 ranks" 'grep -q "(2 ranks, global batch 64)" "$work/out/sbatch.job"'
expect_two_hosts "sbatch" "$work/sbatch"
check "sbatch weights bitwise equal the --hostfile run's" 'cmp "$work/hostfile.pt" "$work/sbatch.pt"'

# 3. salloc, ranks started by srun.
mkdir "$work/srun"
PROBE_DIR=$work/srun run_logged srun salloc -N2 -n2 "$launcher" --srun \
  -- lenet5 "${lenet5_args[@]}" --save-weights "$work/srun.pt"
check "salloc --srun job exits 0" '[ "$status" = 0 ]'
check "salloc: the shared network is found through the job's nodes and announced" 'grep -qF "$chosen" "$work/out/srun"'
expect_two_hosts "srun" "$work/srun"
check "srun weights bitwise equal the --hostfile run's" 'cmp "$work/hostfile.pt" "$work/srun.pt"'

# 4. 3 tasks on 2 nodes, through mpirun and through srun; -n 4 is refused.
three=$(printf 'rank=0 local=0 size=3 host=tntsl-h0 restart=0\nrank=1 local=1 size=3 host=tntsl-h0 restart=0\nrank=2 local=0 size=3 host=tntsl-h1 restart=0')
for mode in mpirun srun; do
  mkdir "$work/three-$mode"
  flag=(); [ "$mode" = srun ] && flag=(--srun)
  PROBE_DIR=$work/three-$mode run_logged "three-$mode" salloc -N2 -n3 "$launcher" "${flag[@]}" -- ident
  check "3 tasks on 2 nodes ($mode): exit 0" '[ "$status" = 0 ]'
  got=$(layout "$work/three-$mode")
  check "3 tasks on 2 nodes ($mode): ranks 0,1 on tntsl-h0 (local 0,1), rank 2 on tntsl-h1 (local 0)" \
    '[ "$got" = "$three" ]' || echo "got: $got"
done
run_logged four salloc -N2 -n3 "$launcher" -n 4 -- ident
check "-n 4 in 3 tasks: exit 2" '[ "$status" = 2 ]'
check "-n 4 in 3 tasks: one clear error" \
  '[ "$(grep -c "tarantella: error: -n 4 is more than the 3 tasks of Slurm job" "$work/out/four")" = 1 ]'

# 4b. --max-restarts inside a job: rank 1 fails on the first attempt; the
#     restart runs in the same allocation and both start modes tell the
#     ranks the attempt (TNT_RESTART_COUNT=1).
cat >"$work/bin/flaky" <<'FLAKY'
#!/bin/sh
[ "$TNT_RESTART_COUNT" = 0 ] && [ "$OMPI_COMM_WORLD_RANK" = 1 ] && exit 3
exec ident
FLAKY
chmod +x "$work/bin/flaky"
restarted=$(printf 'rank=0 local=0 size=2 host=tntsl-h0 restart=1\nrank=1 local=0 size=2 host=tntsl-h1 restart=1')
for mode in mpirun srun; do
  mkdir "$work/restart-$mode"
  flag=(); [ "$mode" = srun ] && flag=(--srun)
  PROBE_DIR=$work/restart-$mode run_logged "restart-$mode" salloc -N2 -n2 "$launcher" "${flag[@]}" \
    --max-restarts 1 -- flaky
  got=$(layout "$work/restart-$mode")
  log=$work/out/restart-$mode
  check "restart ($mode): exit 0 after one restart" '[ "$status" = 0 ]'
  check "restart ($mode): the failure named, then restarted" \
    'grep -q "rank 1 on host tntsl-h1 exited with code 3" "$log" && grep -q "restarting (restart 1 of 1)" "$log"'
  check "restart ($mode): both ranks see TNT_RESTART_COUNT=1 on the same hosts" '[ "$got" = "$restarted" ]' ||
    echo "got: $got"
done

# 5. scancel of a running job leaves nothing behind.
mkdir "$work/cancel"
job=$(PROBE_DIR=$work/cancel sbatch --parsable --chdir="$work" --output="$work/out/cancel.job" \
  "$sbatch_script" --epochs 50 --train-size 60000)
deadline=$((SECONDS + 60))
until [ -f "$work/cancel/rank0" ] && [ -f "$work/cancel/rank1" ]; do
  [ "$SECONDS" -ge "$deadline" ] && break
  sleep 0.2
done
check "job $job started its 2 ranks" '[ -f "$work/cancel/rank0" ] && [ -f "$work/cancel/rank1" ]'
ours() { pgrep -f -- "$work/bin" | grep -vx "$$"; }
in_hosts() {  # processes in the hosts other than their slurmd
  local ns
  for ns in tntsl-h0 tntsl-h1; do
    ip netns pids "$ns" | grep -vx "$(cat "$work/cluster/slurm/slurmd-$ns.pid")"
  done
}
check "before scancel: ranks are running" '[ -n "$(ours)" ]'
scancel "$job"
deadline=$((SECONDS + 10))
while [ -n "$(ours)$(in_hosts)" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
check "10 s after scancel: no process of the job left anywhere" '[ -z "$(ours)" ]' ||
  ps -o pid,args -p "$(ours | paste -sd,)"
check "10 s after scancel: only slurmd left in each host" '[ -z "$(in_hosts)" ]' ||
  ps -o pid,args -p "$(in_hosts | paste -sd,)"

finish_checks
