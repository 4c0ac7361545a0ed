// --cleanup: stop this user's leftover processes of a program.
//
// After a crash or a killed job, ranks may survive on some hosts and hold
// GPUs or ports. On one node the launcher cleans up in-process; with a
// hostfile it starts itself once per host through mpirun in the hidden
// `--cleanup-exec` mode, whose arguments are written and read here.
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// The first argument that selects the per-host cleanup mode.
inline constexpr const char* kCleanupExecFlag = "--cleanup-exec";

/// {"--cleanup-exec", "--signal=TERM|KILL", "--", program}.
std::vector<std::string> cleanup_exec_arguments(bool force, const std::string& program);

/// What one host's cleanup does.
struct CleanupRequest {
  std::string program;   ///< absolute, or a bare name looked up in this host's PATH
  bool force = false;    ///< SIGKILL instead of SIGTERM
  bool dry_run = false;  ///< list the matches, signal nothing
};

/// Parses the arguments after argv[0], starting with "--cleanup-exec".
CleanupRequest parse_cleanup_exec(const std::vector<std::string>& args);

/// Signals every matching process of the real user on this host, except this
/// process and its ancestors, and prints one line with the count. Returns the
/// exit code: 0, or 1 when some process could not be signalled.
int clean_up_this_host(const CleanupRequest& request);

}  // namespace tnt::cli
