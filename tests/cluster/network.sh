#!/usr/bin/env bash
# The launcher's network choice on two simulated hosts (bench/cluster) that
# each have a second interface on a network of their own (10.99.H.1/24 on
# one end of a veth pair inside the host: this kernel may lack `dummy`), as a node with a private NIC would. Started without any
# network setting, the launcher must pick the one network the hosts and the
# launching node share (the cluster's 10.77.82.0/24), say so (INFO), leave the
# private ones out, and LeNet-5 must train across the hosts over it.
#
#   network.sh PATH/TO/tarantella PATH/TO/lenet5 PATH/TO/cluster.sh
# Exit status 77 (skipped) where network namespaces cannot be created.
set -u
launcher=${1:?usage: network.sh TARANTELLA LENET5 CLUSTER_SH}
lenet5=${2:?}
cluster=${3:?}
source "$(dirname "$0")/lib.sh"
need_namespaces
start_cluster tntnw 10.77.82
for h in 0 1; do
  ip netns exec "tntnw-h$h" sh -c "ip link add extra0 type veth peer name extra1 &&
    ip addr add 10.99.$h.1/24 dev extra0 && ip link set extra1 up && ip link set extra0 up" ||
    skip "cannot add a veth pair in a namespace"
done

# Only the agent: no btl_/oob_tcp_if_include, unlike `cluster.sh flags`.
"$launcher" --hostfile "$work/cluster/hostfile" --mca plm_rsh_agent "$work/cluster/agent" \
  --mca plm_rsh_no_tree_spawn 1 --no-gpu -- "$lenet5" \
  --epochs 1 --train-size 512 --test-size 128 --batch-size 64 --verbose 2 \
  >"$work/out" 2>"$work/err" </dev/null
status=$?
echo "--- exit status $status; stdout:"; tail -n 3 "$work/out"; echo "--- stderr:"; cat "$work/err"

[ "$status" = 0 ] && pass "the job exits 0" || fail "the job exited with $status"
grep -q "(2 ranks, global batch 64)" "$work/out" && pass "2 ranks trained" || fail "lenet5 did not report 2 ranks"
grep -q "^tarantella: INFO: network: 10.77.82.0/24 (tntnw-br0 on this node), the IPv4 network(s) shared by this node and all 2 host(s)" "$work/err" &&
  pass "the shared network is chosen and announced" || fail "no INFO line naming 10.77.82.0/24"
grep -q "10\.99\." "$work/err" && fail "a private network was chosen" || pass "the private networks are left out"

finish_checks
