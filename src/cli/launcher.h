// The user-facing `tarantella` command: parse, plan, then run or print.
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// Runs the launcher for argv (args[0] is the program name) and returns the
/// process exit code:
///   0      the job (or --dry-run, --help, --version, --cleanup) succeeded
///   2      bad command line or setup; nothing was started
///   N      mpirun's exit code, normally the failing rank's code (of the last
///          attempt, with --max-restarts)
///   128+S  the launcher was stopped by signal S, or mpirun died from it
int run_launcher(const std::vector<std::string>& args);

}  // namespace tnt::cli
