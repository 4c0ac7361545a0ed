// Entry point of the `tarantella` executable: picks the mode and maps errors
// to exit codes. The user-facing launcher is launcher.cpp; mpirun starts
// this same binary in the hidden --rank-exec (per-rank wrapper) and
// --cleanup-exec (per-host cleanup) modes.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cleanup/cleanup.h"
#include "common/launcher_error.h"
#include "launcher.h"
#include "rank/rank_exec.h"
#include "rank/rank_exec_options.h"

namespace {

namespace cli = tnt::cli;

int dispatch(const std::vector<std::string>& args) {
  const std::string mode = args.size() > 1 ? args[1] : "";
  const std::vector<std::string> mode_args(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (mode == cli::kRankExecFlag) return cli::run_rank_exec(mode_args);
  if (mode == cli::kCleanupExecFlag) {
    return cli::clean_up_this_host(cli::parse_cleanup_exec(mode_args));
  }
  return cli::run_launcher(args);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  try {
    return dispatch(args);
  } catch (const tnt::cli::LauncherError& error) {
    std::cerr << "tarantella: error: " << error.what() << std::endl;
    return error.exit_code();
  } catch (const std::exception& error) {
    std::cerr << "tarantella: error: " << error.what() << std::endl;
    return 1;
  }
}
