// What the launcher will run: mpirun's argv and the variables added to its
// environment, resolved once from the user's options and the node's facts.
//
// This is the one place where defaults are resolved (GPU rule, thread rule,
// root handling, host list), and it is a pure function: the unit tests check
// each flag's effect here, and --dry-run prints exactly this plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parse/env_assignment.h"
#include "parse/launch_options.h"
#include "probe/node_facts.h"

namespace tnt::cli {

/// Exported to every rank: 0 on the first run of a job, n on its n-th
/// restart (--max-restarts), so a program can log it or resume its training.
inline constexpr const char kRestartCountVariable[] = "TNT_RESTART_COUNT";

/// A fully resolved mpirun invocation.
struct LaunchPlan {
  /// Set in mpirun's environment, in this order (later entries never repeat a name).
  std::vector<EnvAssignment> environment;
  /// "mpirun" and its arguments; argv[0] is looked up in PATH.
  std::vector<std::string> argv;
  /// Printed to stderr as "tarantella: WARNING: ...".
  std::vector<std::string> warnings;
  /// Human-readable facts about the decision, shown by --dry-run as comments.
  std::vector<std::string> notes;
  /// --output-filename made absolute: the launcher creates it and checks that
  /// it is writable before starting mpirun (not for --dry-run).
  std::optional<std::string> output_directory;
  /// Ranks started on each host (or on this node); 1 for cleanup plans.
  int ranks_per_node = 1;
};

/// Plans a training run. `program_path` is the resolved program (absolute).
/// Throws LauncherError when pinning is requested but impossible here, or
/// when --min-ranks asks for more ranks than the plan starts.
/// Example: options -n 3 on a CPU node -> argv "mpirun ... -np 3 ... -- /abs/prog".
LaunchPlan build_launch_plan(const LaunchOptions& options, const NodeFacts& facts,
                             const std::string& program_path);

/// Plans `--cleanup` across options.hosts(): one launcher per host in its
/// internal cleanup mode. `program` is absolute, or a bare name to look up on
/// each host.
LaunchPlan build_cleanup_plan(const LaunchOptions& options, const NodeFacts& facts,
                              const std::string& program);

}  // namespace tnt::cli
