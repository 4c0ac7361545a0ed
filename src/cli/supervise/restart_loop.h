// Running a job, and running it again when it fails (--max-restarts).
//
// A failure is mpirun ending with a non-zero status: a rank exited non-zero
// or was killed by a signal, or mpirun itself failed (a host it could not
// reach). A job the user stopped (Ctrl+C, SIGTERM/SIGHUP to the launcher) is
// never restarted: the user wants it to end. Before a restart on the hosts of
// a hostfile, every host is probed (host_probe.h): those that cannot be
// reached are left out while at least --min-ranks ranks remain (without
// --min-ranks, every host must be reachable), else the launcher stops with an
// error that names the numbers. All hosts of the hostfile are probed each
// time, so a host that comes back takes part again.
//
// The loop only decides; starting mpirun and probing are hooks, so the unit
// tests drive it with fakes. Resuming the training where it stopped is the
// program's business (it sees TNT_RESTART_COUNT; see docs/launcher.md).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "probe/host_probe.h"
#include "supervise/supervisor.h"

namespace tnt::cli {

/// How a failed job is restarted.
/// Example: `RestartPolicy{2, {"h1", "h2"}, 4, 4}`: up to 2 restarts, 4 ranks
/// on each of h1 and h2, going on with one host if the other is gone.
struct RestartPolicy {
  /// --max-restarts: restarts after the first run; 0 runs the job once.
  int max_restarts = 0;
  /// The hostfile's hosts, probed before each restart; empty: this node only.
  std::vector<std::string> hosts;
  int ranks_per_node = 1;
  /// --min-ranks; nullopt: every host must be reachable.
  std::optional<int> min_ranks;
  /// Between a failure and the next start: lets ports, GPU memory and the
  /// rank wrappers of the failed run go away.
  std::chrono::milliseconds pause{1000};
};

/// Where the loop meets the world.
struct RestartHooks {
  /// Runs one attempt: `restart_count` 0 for the first run, n for the n-th
  /// restart, on `hosts` (the policy's hosts minus those left out).
  std::function<SupervisedResult(int restart_count, const std::vector<std::string>& hosts)> run;
  /// Probes hosts before a restart (probe_hosts in the launcher).
  std::function<std::vector<HostProbe>(const std::vector<std::string>& hosts)> probe;
  /// Where the restart, host and "job failed" lines go.
  std::ostream* log = nullptr;
};

/// Runs attempts until one succeeds, the user stops one, or the restarts are
/// used up, and returns the launcher's exit code: 0, the last attempt's exit
/// code, or 128+S when the launcher was stopped by signal S. Throws
/// LauncherError (with the last attempt's exit code) when too few ranks can
/// be reached for a restart.
int run_with_restarts(const RestartPolicy& policy, const RestartHooks& hooks);

/// The hosts of the next attempt: those the probes found reachable, in the
/// hostfile's order. Logs one line per host left out; throws LauncherError
/// with `exit_code` when fewer ranks than the policy requires remain.
std::vector<std::string> hosts_for_restart(const std::vector<HostProbe>& probes,
                                           const RestartPolicy& policy, int exit_code,
                                           std::ostream& log);

/// Why the attempt failed, for the "job failed" line: "mpirun exited with
/// code 3 (rank 1 failed first, see above)" or "stopped by signal 15 (...)".
std::string failure_reason(const SupervisedResult& result);

}  // namespace tnt::cli
