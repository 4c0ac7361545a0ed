#!/usr/bin/env bash
# LeNet-5 trained for one short epoch on two simulated hosts through
#   tarantella --hostfile HOSTS --mca ... -- lenet5
# (the flags from bench/cluster/cluster.sh). Checks that the job succeeded,
# that its 2 ranks ran in 2 different namespaces under the hosts' names, and
# that their gradients crossed the shaped links (bytes through each host's
# qdisc). The cluster has its own names, subnet and folder, so a benchmark's
# cluster can stay up meanwhile; it is taken down on any exit.
#
#   two_hosts.sh PATH/TO/tarantella PATH/TO/lenet5 PATH/TO/cluster.sh
# Exit status 77 (skipped) where network namespaces cannot be created.
set -u
launcher=${1:?usage: two_hosts.sh TARANTELLA LENET5 CLUSTER_SH}
lenet5=${2:?}
cluster=${3:?}
source "$(dirname "$0")/lib.sh"
need_namespaces
start_cluster tntct 10.77.79

# Each rank records where it runs, then becomes lenet5: the probe is started
# as the program's interpreter, the launcher's ordinary way to wrap a program.
cat >"$work/probe.sh" <<'PROBE'
#!/bin/sh
echo "rank=$OMPI_COMM_WORLD_RANK ns=$(ip netns identify $$) host=$(hostname)" >"$PROBE_DIR/rank$OMPI_COMM_WORLD_RANK"
exec "$@"
PROBE
chmod +x "$work/probe.sh"

start=$(date +%s)
# shellcheck disable=SC2046  # the flags are words without blanks (cluster.sh checks)
"$launcher" $("$cluster" flags) --no-gpu -x "PROBE_DIR=$work" \
  --python-interpreter "$work/probe.sh" -- "$lenet5" \
  --epochs 1 --train-size 1024 --test-size 256 --batch-size 64 --verbose 2 \
  >"$work/out" 2>"$work/err" </dev/null
status=$?
echo "--- launcher exit status $status after $(($(date +%s) - start)) s; stdout:"; cat "$work/out"
echo "--- stderr:"; cat "$work/err"

[ "$status" = 0 ] && pass "the job exits 0" || fail "the job exited with $status"
grep -q "test accuracy" "$work/out" && pass "lenet5 trained and evaluated" || fail "no 'test accuracy' line"
grep -q "(2 ranks, global batch 64)" "$work/out" && pass "2 ranks" || fail "lenet5 did not report 2 ranks"
for r in 0 1; do
  line=$(cat "$work/rank$r" 2>/dev/null)
  [ "$line" = "rank=$r ns=tntct-h$r host=tntct-h$r" ] && pass "rank $r ran on host tntct-h$r" ||
    fail "rank $r: expected namespace and host tntct-h$r, got '$line'"
done
# LeNet-5's gradients are 247 KB a step, 16 steps, plus the initial broadcast:
# several MB must have left each host through its shaped interface.
for r in 0 1; do
  sent=$(ip netns exec "tntct-h$r" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}')
  (( ${sent:-0} > 2000000 )) && pass "host $r sent $sent bytes through its tbf qdisc" ||
    fail "host $r sent only ${sent:-0} bytes through its tbf qdisc (the ranks did not talk over the link?)"
done

finish_checks
