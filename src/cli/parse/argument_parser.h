// Command line -> LaunchOptions, with CLI11 doing the flag mechanics.
//
// The user's argv is split at the first "--": everything before it is ours,
// everything after it is the program and its arguments, untouched. Cross-flag
// rules (-n with --n-per-node, --force without --cleanup, --autotune-log
// without --autotune) and value formats (-x and --mca entries, the
// interpreter's quoting) are checked here, so everything after parsing can
// trust LaunchOptions.
#pragma once

#include <string>
#include <vector>

#include "parse/launch_options.h"

namespace tnt::cli {

/// What the command line asks for.
struct ParsedCommand {
  enum class Kind { kRun, kHelp, kVersion };
  Kind kind = Kind::kRun;
  std::string text;       ///< the help or version text for kHelp / kVersion
  LaunchOptions options;  ///< for kRun; hosts not yet read (see hostfile)
  std::string hostfile;   ///< --hostfile path, empty when not given
};

/// Parses argv (args[0] is the program name). Throws LauncherError with a
/// message that names the bad flag or value and the fix.
/// Example: `parse_arguments({"tarantella", "-n", "2", "--", "./train"})`.
ParsedCommand parse_arguments(const std::vector<std::string>& args);

}  // namespace tnt::cli
