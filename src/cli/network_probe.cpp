// Choosing the network of a multi-host job; see network_probe.h.
#include "network_probe.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "network_choice.h"
#include "spawn.h"

namespace tnt::cli {
namespace {

// Whether the launcher should pick the network: several hosts, and neither
// --network-interface nor an OpenMPI interface setting from the user.
bool needs_network_choice(const LaunchOptions& options, const std::string& here) {
  if (options.network_interface()) return false;
  const auto& hosts = options.hosts();
  if (std::all_of(hosts.begin(), hosts.end(),
                  [&](const std::string& h) { return is_this_host(h, here); })) {
    return false;
  }
  for (const char* name :
       {"btl_tcp_if_include", "oob_tcp_if_include", "btl_tcp_if_exclude", "oob_tcp_if_exclude"}) {
    if (std::getenv((std::string("OMPI_MCA_") + name).c_str()) != nullptr) return false;
    for (const auto& p : options.mca_parameters()) {
      if (p.name == name) return false;
    }
  }
  return true;
}

// Each host's networks through the agent mpirun uses (the list comes back on
// standard error, which probes keep); this node's directly. nullopt, with a
// warning, when a host cannot tell: then OpenMPI chooses as it always did.
std::optional<std::vector<HostNetworks>> list_networks(const LaunchOptions& options,
                                                       ProbeOptions probe) {
  const std::vector<std::string> ip = {"ip", "-o", "-4", "addr", "show"};
  std::vector<HostNetworks> all;
  try {
    all.push_back({"this node", parse_ip_addresses(capture_stdout(ip))});
  } catch (const std::exception& error) {
    std::cerr << "tarantella: WARNING: cannot list this node's networks (" << error.what()
              << "); OpenMPI chooses the network (--network-interface chooses one)" << std::endl;
    return std::nullopt;
  }
  probe.command = ip;
  probe.command.push_back(">&2");
  for (const auto& answer : probe_hosts(options.hosts(), probe)) {
    if (answer.problem) {
      std::cerr << "tarantella: WARNING: cannot list the networks of host " << answer.host << " ("
                << *answer.problem
                << "); OpenMPI chooses the network (--network-interface chooses one)" << std::endl;
      return std::nullopt;
    }
    const bool here = is_this_host(answer.host, probe.this_hostname);
    all.push_back(
        {answer.host, here ? all.front().networks : parse_ip_addresses(answer.error_output)});
  }
  return all;
}

}  // namespace

LaunchOptions with_network(LaunchOptions options, const ProbeOptions& probe) {
  if (!needs_network_choice(options, probe.this_hostname)) return options;
  const auto networks = list_networks(options, probe);
  if (!networks) return options;
  const NetworkChoice choice = choose_shared_network(*networks);
  std::cerr << "tarantella: INFO: network: " << choice.explanation << std::endl;
  return options.network_interface(choice.value);
}

}  // namespace tnt::cli
