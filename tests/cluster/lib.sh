# shellcheck shell=bash
# Shared by the tests on simulated hosts (bench/cluster/cluster.sh): PASS,
# FAIL and SKIPPED lines, the checks that this machine can make network
# namespaces (else the test is skipped, exit 77), and a two-host cluster with
# the test's own names, subnet and folder, taken down on any exit.
#
#   source lib.sh          (with $cluster naming cluster.sh)
#   need_namespaces
#   start_cluster PREFIX SUBNET      e.g. start_cluster tntct 10.77.79; sets $work
#   ... checks with pass/fail ...
#   finish_checks
# A test that starts more on the cluster defines stop_services(), which runs
# before the cluster is taken down.
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }
failures=0

need_namespaces() {
  [ "$(id -u)" = 0 ] || skip "needs root to create network namespaces (run ctest as root, or in a container with CAP_NET_ADMIN and CAP_SYS_ADMIN)"
  local tool
  for tool in ip tc unshare taskset; do
    command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install iproute2 util-linux)"
  done
  unshare --net true 2>/dev/null || skip "cannot create a network namespace here (no CAP_NET_ADMIN/CAP_SYS_ADMIN, or a seccomp policy forbids it)"
  [ -d /usr/share/datasets/fashion-mnist ] || skip "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
}

finish_cluster() {
  if declare -F stop_services >/dev/null; then stop_services; fi
  "$cluster" down || echo "FAIL: cluster.sh down failed"
  local ns
  for ns in "$TNT_CLUSTER_PREFIX-h0" "$TNT_CLUSTER_PREFIX-h1"; do
    if [ -e "/run/netns/$ns" ]; then echo "FAIL: namespace $ns left behind"; fi
  done
  rm -rf "$work"
}

start_cluster() {  # PREFIX SUBNET
  work=$(mktemp -d "${TMPDIR:-/tmp}/tnt-cluster-test.XXXXXX")
  chmod 755 "$work"  # munged (slurm.sh) wants its socket's folders readable
  export TNT_CLUSTER_DIR=$work/cluster TNT_CLUSTER_PREFIX=$1 TNT_CLUSTER_SUBNET=$2
  trap finish_cluster EXIT
  "$cluster" up --hosts 2 --rate 10gbit || { fail "cluster.sh up"; exit 1; }
}

finish_checks() {
  [ "$failures" = 0 ] || { echo "$failures check(s) failed"; exit 1; }
  echo "all checks passed"
}
