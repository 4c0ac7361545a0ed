// The restart loop; see restart_loop.h.
#include "supervise/restart_loop.h"

#include <iostream>
#include <thread>

#include "common/launcher_error.h"
#include "common/exit_status.h"

namespace tnt::cli {
namespace {

std::string count_text(long n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

int job_exit_code(const SupervisedResult& result) {
  if (result.stop_signal != 0) return 128 + result.stop_signal;
  return exit_code_of(result.wait_status);
}

// The error when the reachable hosts are too few for a restart.
std::string too_few_ranks(const RestartPolicy& policy, long hosts_left) {
  const long all_hosts = static_cast<long>(policy.hosts.size());
  const long ranks_left = hosts_left * policy.ranks_per_node;
  if (hosts_left == 0) {
    return "cannot restart: none of the " + count_text(all_hosts, "host") +
           " of the hostfile can be reached (see above): check the hosts and the remote agent "
           "(ssh, or --mca plm_rsh_agent)";
  }
  if (!policy.min_ranks) {
    return "cannot restart: " + std::to_string(all_hosts - hosts_left) + " of " +
           count_text(all_hosts, "host") +
           " cannot be reached, and without --min-ranks every host must take part: give "
           "--min-ranks " +
           std::to_string(ranks_left) + " to go on with the " + count_text(ranks_left, "rank") +
           " of the reachable hosts";
  }
  return "cannot restart: only " + count_text(ranks_left, "rank") + " on " +
         count_text(hosts_left, "reachable host") + " remain, fewer than --min-ranks " +
         std::to_string(*policy.min_ranks) +
         ": make the hosts reachable again, or give a smaller --min-ranks";
}

}  // namespace

std::string failure_reason(const SupervisedResult& result) {
  if (result.stop_signal != 0) return "stopped by " + describe_signal(result.stop_signal);
  const std::string how = result.starter + " " + describe_wait_status(result.wait_status);
  if (!result.first_failed_rank) return how;
  std::string reason =
      how + " (rank " + std::to_string(*result.first_failed_rank) + " failed first, see above";
  if (result.other_failed_ranks > 0) {
    reason += "; " + std::to_string(result.other_failed_ranks) + " other rank(s) failed too";
  }
  return reason + ")";
}

std::vector<std::string> hosts_for_restart(const std::vector<HostProbe>& probes,
                                           const RestartPolicy& policy, int exit_code,
                                           std::ostream& log) {
  std::vector<std::string> reachable;
  for (const auto& probe : probes) {
    if (!probe.problem) reachable.push_back(probe.host);
  }
  long hosts_left = static_cast<long>(probes.size());
  for (const auto& probe : probes) {
    if (!probe.problem) continue;
    --hosts_left;
    log << "tarantella: host " << probe.host << " cannot be reached (" << *probe.problem
        << "): leaving it out; " << count_text(hosts_left, "host") << ", "
        << count_text(hosts_left * policy.ranks_per_node, "rank") << " remain" << std::endl;
  }
  const long all_ranks = static_cast<long>(policy.hosts.size()) * policy.ranks_per_node;
  const long required = policy.min_ranks ? *policy.min_ranks : all_ranks;
  if (reachable.empty() || hosts_left * policy.ranks_per_node < required) {
    throw LauncherError(too_few_ranks(policy, hosts_left), exit_code);
  }
  return reachable;
}

int run_with_restarts(const RestartPolicy& policy, const RestartHooks& hooks) {
  std::ostream& log = hooks.log ? *hooks.log : std::cerr;
  std::vector<std::string> hosts = policy.hosts;
  for (int restart = 0;; ++restart) {
    const SupervisedResult result = hooks.run(restart, hosts);
    const int code = job_exit_code(result);
    if (code == 0) return 0;
    log << "tarantella: job failed: " << failure_reason(result);
    if (result.stop_signal != 0 || restart == policy.max_restarts) {
      if (result.stop_signal == 0 && restart > 0) {
        log << "; giving up after " << count_text(restart, "restart");
      }
      log << std::endl;
      return code;
    }
    log << "; restarting (restart " << restart + 1 << " of " << policy.max_restarts << ")"
        << std::endl;
    std::this_thread::sleep_for(policy.pause);
    if (!policy.hosts.empty()) {
      hosts = hosts_for_restart(hooks.probe(policy.hosts), policy, code, log);
    }
  }
}

}  // namespace tnt::cli
