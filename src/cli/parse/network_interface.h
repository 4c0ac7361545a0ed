// --network-interface: which network OpenMPI's TCP traffic may use.
//
// The value goes to OpenMPI's btl_tcp_if_include and oob_tcp_if_include,
// which accept interface names ("eth1", "ib0") and IPv4 subnets in CIDR form
// ("10.1.0.0/16"), comma-separated. It is checked here so that a typo is a
// clear error before anything starts, not a job that hangs while OpenMPI
// looks for a peer on a network that does not exist.
#pragma once

#include <string>

namespace tnt::cli {

/// Returns `text` when every comma-separated item is an interface name (1 to
/// 15 characters of letters, digits and "_.-:@", as Linux allows) or an IPv4
/// subnet a.b.c.d/N (N 0..32); throws LauncherError naming the bad item.
/// Example: `parse_network_interface("eth1,10.1.0.0/16")` -> "eth1,10.1.0.0/16".
std::string parse_network_interface(const std::string& text);

}  // namespace tnt::cli
