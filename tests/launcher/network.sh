#!/usr/bin/env bash
# The network of a multi-host run: without --network-interface the launcher
# asks every host of the hostfile for its IPv4 networks (through the remote
# agent, here a fake one that answers for made-up hosts), keeps those all
# hosts and this node share, says so (INFO) and gives them to OpenMPI; no
# shared network is a clear error; a network the user named is not probed.
# mpirun is a fake that records its arguments.
source "$(dirname "$0")/lib.sh"

cd "$WORK" || exit 1
mine=$(ip -o -4 addr show 2>/dev/null | awk '$3 == "inet" && $4 !~ /^127\./ {print; exit}')
[ -n "$mine" ] || { echo "SKIPPED: this node has no IPv4 network besides loopback"; exit 77; }
net=$(python3 -c 'import ipaddress, sys; print(ipaddress.ip_interface(sys.argv[1]).network)' \
  "$(awk '{print $4}' <<<"$mine")")

# agent HOST WORD...: `true` succeeds; `ip ... >&2` prints the host's list on stderr.
cat >agent <<AGENT
#!/bin/sh
host=\$1; shift
case "\$host" in down) echo "ssh: connect to host down port 22: No route to host" >&2; exit 255 ;; esac
[ "\$1" = true ] && exit 0
case "\$host" in
  alpha) printf '%s\n3: extra0    inet 10.99.0.1/24 scope global extra0\n' '$mine' >&2 ;;
  beta) printf '%s\n3: extra0    inet 10.99.1.1/24 scope global extra0\n' '$mine' >&2 ;;
  gamma) echo '2: eth0    inet 10.250.0.7/24 scope global eth0' >&2 ;;
esac
AGENT
mkdir fakebin
printf '#!/bin/sh\necho "mpirun $*"\n' >fakebin/mpirun
chmod +x agent fakebin/mpirun
export PATH=$WORK/fakebin:$PATH
printf 'alpha\nbeta\n' >two
printf 'alpha\nbeta\ngamma\n' >three
printf 'alpha\ndown\n' >unreachable

run --hostfile two --no-gpu --mca plm_rsh_agent "$WORK/agent" -- /bin/true
expect_status "shared network: the job runs" 0
expect_contains "shared network: announced" "$ERR" "tarantella: INFO: network: $net ("
expect_contains "shared network: explained" "$ERR" "the IPv4 network(s) shared by this node and all 2 host(s)"
expect_contains "shared network: given to OpenMPI" "$OUT" "--mca btl_tcp_if_include $net --mca oob_tcp_if_include $net"
expect_not_contains "unshared networks left out" "$OUT" "10.99."

run --hostfile three --no-gpu --mca plm_rsh_agent "$WORK/agent" -- /bin/true
expect_status "no shared network: exit 2" 2
expect_contains "no shared network: every host listed" "$ERR" "tarantella: error: no IPv4 network is shared by this node and every host ("
expect_contains "no shared network: names gamma's" "$ERR" "gamma: 10.250.0.0/24 (eth0)"
expect_contains "no shared network: the fix" "$ERR" "name the one to use with --network-interface NAME|CIDR"
expect_not_contains "no shared network: nothing started" "$OUT" "mpirun"

run --hostfile unreachable --no-gpu --mca plm_rsh_agent "$WORK/agent" -- /bin/true
expect_contains "unreachable host: warned, OpenMPI chooses" "$ERR" "tarantella: WARNING: cannot list the networks of host down"
expect_not_contains "unreachable host: no choice made" "$OUT" "if_include"

run --hostfile three --no-gpu --network-interface eth9 --mca plm_rsh_agent "$WORK/agent" -- /bin/true
expect_status "named network: no probe, runs" 0
expect_not_contains "named network: no INFO" "$ERR" "INFO: network"
expect_contains "named network: both settings" "$OUT" "--mca btl_tcp_if_include eth9 --mca oob_tcp_if_include eth9"

run --hostfile three --no-gpu --mca btl_tcp_if_include eth9 --mca plm_rsh_agent "$WORK/agent" -- /bin/true
expect_status "user's --mca: runs" 0
expect_not_contains "user's --mca: not overridden" "$ERR" "INFO: network"

run --dry-run --hostfile three --no-gpu --mca plm_rsh_agent "$WORK/agent" -- /bin/true
expect_status "--dry-run asks no host" 0
expect_not_contains "--dry-run: no choice" "$OUT" "if_include"

finish
