// Running mpirun and stopping it reliably.
//
// mpirun stays in the launcher's process group, so a Ctrl+C at the terminal
// reaches both; mpirun then stops the ranks itself and we must not signal it
// a second time (that makes OpenMPI skip its orderly shutdown). A signal sent
// to the launcher alone (kill PID, a batch system) is passed on to mpirun
// once. Either way, if mpirun is still alive 5 s after the first signal, it
// is SIGKILLed; the rank wrappers notice their parent is gone and stop their
// programs. mpirun's standard error is relayed through a ReportFilter, which
// keeps the first report of a failing rank and drops its echoes (see
// report_filter.h). If the launcher itself is SIGKILLed (OOM killer, batch
// scheduler), mpirun gets SIGTERM as its parent-death signal, and an
// OrphanGuard helper SIGKILLs it if it is still alive 5 s later.
//
// A rank that failed ends the job: mpirun then stops the other ranks, which
// takes it a second or two. It cannot when a host is cut off (its link
// down): mpirun waits for that host's daemon until the link returns, which
// may be never, so the job neither ends nor restarts; a host that is gone
// (its daemon lost) held mpirun for up to a minute. So once a rank has
// reported a failure, or mpirun has said that it lost a daemon, mpirun gets
// `failure_grace` to end; then the launcher says so and SIGKILLs it (found
// by tests/cluster/host_faults.sh). The daemons on the reachable
// hosts see mpirun gone and stop their ranks; a rank on a cut-off host stops
// by itself (its collective times out, TNT_COMM_TIMEOUT, and its daemon ends
// when it finds mpirun gone).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "parse/env_assignment.h"

namespace tnt::cli {

/// How the supervised command ended.
struct SupervisedResult {
  int wait_status = 0;
  int stop_signal = 0;  ///< the first stop signal the launcher received, 0 if none
  /// The rank of the rank failure report shown (see report_filter.h), if any.
  std::optional<int> first_failed_rank;
  /// Other ranks that reported a failure; their reports were not shown.
  int other_failed_ranks = 0;
  /// What started the ranks, named in the failure summary: mpirun or srun.
  std::string starter = "mpirun";
};

/// Example: `supervise({"mpirun", "-np", "2", ...}, {{"A", "1"}})`.
struct SuperviseOptions {
  std::vector<std::string> argv;
  /// Added to (or replacing in) the launcher's environment for the command.
  std::vector<EnvAssignment> environment;
  std::chrono::milliseconds kill_delay{5000};
  /// How long mpirun may take to end after a rank reported a failure.
  std::chrono::milliseconds failure_grace{10000};
};

/// Starts the command and waits for it, showing its standard error through
/// a ReportFilter (its standard output is ours). Throws SpawnError when it
/// cannot be started.
SupervisedResult supervise(const SuperviseOptions& options);

/// Our environment with `changes` applied, as "NAME=VALUE" entries.
std::vector<std::string> environment_with(const std::vector<EnvAssignment>& changes);

}  // namespace tnt::cli
