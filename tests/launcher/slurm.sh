#!/usr/bin/env bash
# Inside a Slurm allocation (the variables sbatch/salloc/srun set, faked
# here; tests/cluster/slurm.sh runs a real Slurm): --dry-run shows the
# allocation's hosts and tasks per node, -n/--n-per-node narrow it, a request
# beyond it and malformed variables are clear errors (exit 2), --srun starts
# the ranks with srun, and the wrapper knows its rank from srun's variables.
source "$(dirname "$0")/lib.sh"

cd "$WORK" || exit 1
printf '#!/bin/sh\n' >prog && chmod +x prog

in_job() {  # runs the launcher in a fake job: 3 tasks on 2 nodes (2 + 1)
  # No GPUs, as on the nodes of the fake job: the machine running the test
  # may have some (the launcher would then place ranks by GPU count).
  SLURM_JOB_ID=42 SLURM_JOB_NODELIST='node[01-02]' SLURM_TASKS_PER_NODE='2,1' SLURM_NTASKS=3 \
    run --assume-gpus 0 "$@"
}

in_job --dry-run -- ./prog
echo "--- dry-run output:"; echo "$OUT"
expect_status "allocation: exit 0" 0
expect_contains "allocation: its hosts and tasks" "$OUT" "--host node01:2,node02:1 -np 3 -x"
expect_contains "allocation: explained" "$OUT" "# Slurm job 42 (SLURM_JOB_NODELIST=node[01-02], SLURM_TASKS_PER_NODE=2,1): 3 rank(s), 2 on node01, 1 on node02, on the GPU of each rank's host where it has one, else the CPU (TNT_USE_GPU=auto: this node has no GPU to count); started by mpirun, which starts its daemons through Slurm (no ssh)"
expect_contains "allocation: GPUs unknown here, each host decides" "$OUT" "TNT_USE_GPU=auto"
expect_not_contains "allocation: no GPU warning (the tasks say how many)" "$ERR" "WARNING"
expect_contains "allocation: restart count" "$OUT" "TNT_RESTART_COUNT=0"

in_job --dry-run -n 2 -- ./prog
expect_contains "-n 2 takes the first host" "$OUT" "--host node01:2 -np 2 -x"
in_job --dry-run --n-per-node 1 -- ./prog
expect_contains "--n-per-node 1 on each host" "$OUT" "--host node01:1,node02:1 -np 2 -x"

in_job --dry-run -n 4 -- ./prog
expect_status "-n 4 beyond 3 tasks: exit 2" 2
expect_contains "-n 4 beyond 3 tasks: the numbers" "$ERR" "tarantella: error: -n 4 is more than the 3 tasks of Slurm job 42 (2 on node01, 1 on node02; SLURM_TASKS_PER_NODE=2,1): give -n 3 or less"
in_job --dry-run --n-per-node 2 -- ./prog
expect_status "--n-per-node 2 beyond node02's 1 task: exit 2" 2
expect_contains "--n-per-node 2: names the host" "$ERR" "--n-per-node 2 is more than Slurm job 42 allows on host node02 (1 task;"

in_job --dry-run --srun -- ./prog
expect_status "--srun: exit 0" 0
expect_contains "--srun: srun with the layout" "$OUT" "srun --mpi=pmix --kill-on-bad-exit=1 --cpu-bind=none --nodes=2 --ntasks=3 --distribution=arbitrary --nodelist=node01,node01,node02 "
expect_not_contains "--srun: no mpirun" "$OUT" "mpirun"

run --dry-run --srun -- ./prog
expect_status "--srun outside Slurm: exit 2" 2
expect_contains "--srun outside Slurm: explained" "$ERR" "this is not a Slurm job (SLURM_JOB_ID is not set)"

SLURM_JOB_ID=7 SLURM_JOB_NODELIST='node[01-' SLURM_TASKS_PER_NODE=1 run --dry-run -- ./prog
expect_status "broken node list: exit 2" 2
expect_contains "broken node list: named" "$ERR" "SLURM_JOB_NODELIST='node[01-' has an unclosed '['"
SLURM_JOB_ID=7 SLURM_JOB_NODELIST='a,b' run --dry-run -- ./prog
expect_status "missing tasks: exit 2" 2
expect_contains "missing tasks: named" "$ERR" "SLURM_JOB_ID=7 is set but SLURM_TASKS_PER_NODE is not"
SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1 in_job --dry-run -- ./prog
expect_status "one launcher per srun task: exit 2" 2
expect_contains "one launcher per srun task: explained" "$ERR" "tarantella runs as task 1 of 2 tasks of an srun step"

# The wrapper as srun starts it: no OMPI_COMM_WORLD_*, Slurm's variables instead.
SLURM_PROCID=2 SLURM_LOCALID=0 SLURM_NODEID=1 SLURM_STEP_TASKS_PER_NODE='2,1' SLURM_STEP_NUM_TASKS=3 \
  run --rank-exec --output=rank0 --threads=auto -- sh -c \
  'echo "r=$OMPI_COMM_WORLD_RANK l=$OMPI_COMM_WORLD_LOCAL_RANK ls=$OMPI_COMM_WORLD_LOCAL_SIZE s=$OMPI_COMM_WORLD_SIZE" >&2; exit 3'
expect_status "srun task: exit code passes through" 3
expect_contains "srun task: identity from Slurm's variables" "$ERR" "r=2 l=0 ls=1 s=3"
expect_contains "srun task: failure names the rank" "$ERR" "tarantella: rank 2 on host $(hostname) exited with code 3"

finish
