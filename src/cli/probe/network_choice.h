// Which network a multi-host job uses when the user does not say.
//
// OpenMPI's TCP transport tries every interface a host has. When a host has
// one that the others cannot reach (a second NIC on a private network, a
// container bridge), ranks can hang trying it: the classic "set
// NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME by hand" problem. Like horovodrun,
// the launcher lists each host's IPv4 networks (`ip -o -4 addr show` through
// the remote agent) and keeps only those every host, the launching node
// included (mpirun's control channel starts there), is on. The choice is a
// pure function of those lists, so it is tested without hosts.
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// One IPv4 address of a host, as its network.
struct InterfaceNetwork {
  std::string interface;  ///< "eth0"
  std::string network;    ///< "10.1.0.0/16": the address with its host bits cleared
};

/// Parses `ip -o -4 addr show` ("2: eth0    inet 10.1.2.3/16 brd ..."); lines
/// of another form are ignored, and so are loopback networks.
/// Example: -> {{"eth0", "10.1.0.0/16"}}.
std::vector<InterfaceNetwork> parse_ip_addresses(const std::string& ip_output);

/// A host (or "this node") and its networks.
struct HostNetworks {
  std::string host;
  std::vector<InterfaceNetwork> networks;
};

/// Parses the `ip -o -4 addr show` lines of several nodes, each line
/// prefixed with its node's name ("node01 2: eth0    inet ..."), into one
/// entry per node of `nodes`, in that order (a node without lines has none).
std::vector<HostNetworks> parse_node_prefixed_addresses(const std::string& output,
                                                        const std::vector<std::string>& nodes);

/// The decision: the value for --network-interface and a sentence for INFO.
struct NetworkChoice {
  std::string value;        ///< "10.1.0.0/16" or several, comma-separated
  std::string explanation;  ///< "10.1.0.0/16 (eth0 here), the IPv4 network ..."
};

/// The networks every entry of `hosts` is on, in the first entry's order,
/// leaving out container and VM bridges (docker*, virbr*, br-*, lxcbr*,
/// cni*), whose subnets repeat on hosts that cannot reach each other.
/// Throws LauncherError listing each host's networks when none is shared.
NetworkChoice choose_shared_network(const std::vector<HostNetworks>& hosts);

}  // namespace tnt::cli
