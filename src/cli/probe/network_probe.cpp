// Choosing the network of a multi-host job; see network_probe.h.
#include "probe/network_probe.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "probe/network_choice.h"
#include "common/spawn.h"

namespace tnt::cli {
namespace {

const char kLeftToOpenMpi[] = "OpenMPI chooses the network (--network-interface chooses one)";

// The hosts besides this node: the hostfile's, else a Slurm job's.
std::vector<std::string> job_hosts(const LaunchOptions& options, const NodeFacts& facts) {
  if (!options.hosts().empty() || !facts.slurm_allocation()) return options.hosts();
  return facts.slurm_allocation()->hosts;
}

// Whether the launcher should pick the network: another host takes part,
// and the user named no network (--network-interface, an OpenMPI setting).
bool needs_network_choice(const LaunchOptions& options, const std::vector<std::string>& hosts,
                          const std::string& here) {
  if (options.network_interface()) return false;
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

const std::vector<std::string>& ip_command() {
  static const std::vector<std::string> ip = {"ip", "-o", "-4", "addr", "show"};
  return ip;
}

// Hostfile: each host through the agent mpirun uses (the list comes back on
// standard error, which probes keep).
std::optional<std::vector<HostNetworks>> list_by_agent(const std::vector<std::string>& hosts,
                                                       ProbeOptions probe,
                                                       const HostNetworks& here) {
  probe.command = ip_command();
  probe.command.push_back(">&2");
  std::vector<HostNetworks> all;
  for (const auto& answer : probe_hosts(hosts, probe)) {
    if (answer.problem) {
      std::cerr << "tarantella: WARNING: cannot list the networks of host " << answer.host << " ("
                << *answer.problem << "); " << kLeftToOpenMpi << std::endl;
      return std::nullopt;
    }
    const bool this_one = is_this_host(answer.host, probe.this_hostname);
    all.push_back(
        {answer.host, this_one ? here.networks : parse_ip_addresses(answer.error_output)});
  }
  return all;
}

// Slurm job: one step with a task per node, each line prefixed with its
// node's name. Run as one "probe" (srun ... --nodelist HOSTS COMMAND), so it
// has the probes' deadline and a step that cannot start does not hang us.
std::optional<std::vector<HostNetworks>> list_by_srun(const std::vector<std::string>& hosts,
                                                      const ProbeOptions& probe) {
  const std::string n = std::to_string(hosts.size());
  ProbeOptions step;
  step.agent = {"srun", "--nodes=" + n, "--ntasks=" + n, "--ntasks-per-node=1", "--nodelist"};
  step.command = {"sh", "-c", "ip -o -4 addr show | sed \"s/^/$SLURMD_NODENAME /\" >&2"};
  step.timeout = probe.timeout;
  std::string node_list;
  for (const auto& h : hosts) node_list += (node_list.empty() ? "" : ",") + h;
  const HostProbe answer = probe_hosts({node_list}, step).front();
  if (answer.problem) {
    std::cerr << "tarantella: WARNING: cannot list the networks of the job's nodes ("
              << *answer.problem << "); " << kLeftToOpenMpi << std::endl;
    return std::nullopt;
  }
  return parse_node_prefixed_addresses(answer.error_output, hosts);
}

}  // namespace

LaunchOptions with_network(LaunchOptions options, const ProbeOptions& probe,
                           const NodeFacts& facts) {
  const std::vector<std::string> hosts = job_hosts(options, facts);
  if (!needs_network_choice(options, hosts, probe.this_hostname)) return options;
  HostNetworks here{"this node", {}};
  try {
    here.networks = parse_ip_addresses(capture_stdout(ip_command()));
  } catch (const std::exception& error) {
    std::cerr << "tarantella: WARNING: cannot list this node's networks (" << error.what() << "); "
              << kLeftToOpenMpi << std::endl;
    return options;
  }
  const bool slurm = options.hosts().empty();
  auto networks = slurm ? list_by_srun(hosts, probe) : list_by_agent(hosts, probe, here);
  if (!networks) return options;
  networks->insert(networks->begin(), here);
  const NetworkChoice choice = choose_shared_network(*networks);
  std::cerr << "tarantella: INFO: network: " << choice.explanation << std::endl;
  return options.network_interface(choice.value);
}

}  // namespace tnt::cli
