// --dry-run output: the plan as a command a shell runs unchanged.
//
// Format: '#' comment lines with the decisions (placement, threads), then
// `env NAME=VALUE ... mpirun ...` with one assignment per line and every
// word shell-quoted, so copy-pasting it reproduces the exact argv and values.
#pragma once

#include <string>

#include "plan/launch_plan.h"

namespace tnt::cli {

/// Example output (each line but the last ends with a backslash):
///   # 2 rank(s) on this node, on the CPU
///   env
///     TNT_USE_GPU=false
///     'B=two words'
///     mpirun --oversubscribe --bind-to none -np 2 -x TNT_USE_GPU -x B ...
std::string format_dry_run(const LaunchPlan& plan);

}  // namespace tnt::cli
