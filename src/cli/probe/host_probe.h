// Can a host of the hostfile still be reached? Asked before a restart.
//
// mpirun starts its daemon on every host through a remote agent (ssh, or the
// command given with `--mca plm_rsh_agent`, e.g. bench/cluster's namespace
// agent). A probe runs that same agent as `AGENT HOST true`: if the agent
// cannot run `true` there, mpirun could not start a daemon there either, and
// a restart on that host would fail at once. The probes of all hosts run at
// the same time, each with a deadline, so one dead host costs one timeout,
// not one per host. The launching node itself is never probed.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "parse/mca_parameter.h"

namespace tnt::cli {

/// The agent used when neither --mca plm_rsh_agent nor OMPI_MCA_plm_rsh_agent
/// names one: ssh that never asks for a password and gives up after 5 s.
const std::vector<std::string>& default_probe_agent();

/// The words of the remote agent mpirun will use: the last `plm_rsh_agent`
/// (or its old name `orte_rsh_agent`) among `mca`, else `environment_value`
/// (OMPI_MCA_plm_rsh_agent), else default_probe_agent(). As in OpenMPI, the
/// value may list alternatives separated by ':' ("ssh : rsh"), of which the
/// first whose program exists is taken, and is split into words at blanks.
/// Then the words of `plm_rsh_args` (the last among `mca`, else
/// `environment_args`, OMPI_MCA_plm_rsh_args), which mpirun puts between the
/// agent and the host too (`-p 2222`).
/// Example: `probe_agent({{"plm_rsh_agent", "/opt/agent -q"}}, nullopt)` -> {"/opt/agent", "-q"}.
std::vector<std::string> probe_agent(const std::vector<McaParameter>& mca,
                                     const std::optional<std::string>& environment_value,
                                     const std::optional<std::string>& environment_args = std::nullopt);

/// Whether `host` names the launching node: localhost, a 127.x.y.z address,
/// ::1, or `this_hostname` (its short or full form, any case).
bool is_this_host(const std::string& host, const std::string& this_hostname);

/// The launching node's name (gethostname).
std::string this_hostname();

/// Example: `ProbeOptions{{"ssh", "-o", "BatchMode=yes"}, this_hostname()}`.
struct ProbeOptions {
  /// The agent's words; the host and `command` are appended.
  std::vector<std::string> agent;
  /// Hosts that name this node are reachable without a probe.
  std::string this_hostname;
  /// A probe that has not finished by then counts as unreachable.
  std::chrono::milliseconds timeout{10000};
  /// What runs on the host: `true` asks only whether it can be reached;
  /// another command may report on the host through its standard error.
  std::vector<std::string> command{"true"};
};

/// The answer for one host.
struct HostProbe {
  std::string host;
  /// Why the host cannot be reached ("ssh exited with code 255: ssh: connect
  /// to host h2 port 22: No route to host"); nullopt when it can.
  std::optional<std::string> problem;
  /// What the agent wrote to standard error (its last 64 KiB).
  std::string error_output = {};
};

/// Probes `hosts` in parallel; the answers are in the order of `hosts`.
std::vector<HostProbe> probe_hosts(const std::vector<std::string>& hosts,
                                   const ProbeOptions& options);

}  // namespace tnt::cli
