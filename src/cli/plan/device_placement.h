// Whether ranks run on GPUs or CPUs, and how many start per node.
//
// The rule (from the Tarantella manual, §6.2): without a rank count, start
// one rank per GPU of the launching node, or one CPU rank per node where
// there is no GPU; with -n N, N ranks per node, on GPUs when the node has at
// least N. A CPU run on a node without GPUs says nothing: nothing GPU-related
// was asked for, and the CPU is all there is. Only when GPUs exist but -n
// asks for more ranks than there are GPUs does the launcher warn that all
// ranks run on the CPU (GPUs are never shared between ranks). --no-gpu
// chooses the CPU silently.
//
// An explicit request, -x TNT_USE_GPU=true, is checked here against the node:
// a GPU for every rank or an error, never a quiet CPU run.
#pragma once

#include <optional>
#include <string>

namespace tnt::cli {

/// The decision for every node of the job.
struct DevicePlacement {
  int ranks_per_node = 1;
  bool use_gpu = false;
  std::string warning;  ///< empty when there is nothing to warn about
};

/// `requested_per_node` comes from -n or --n-per-node; `gpu_count` is the
/// launching node's (all nodes are assumed alike); `gpu_request` is the value
/// the user gave TNT_USE_GPU with -x, if any. Throws LauncherError when the
/// request cannot be met (no GPU, fewer GPUs than ranks, --no-gpu) or is not
/// a boolean.
/// Example: `place_ranks(std::nullopt, false, 4)` -> {4, true, ""}.
DevicePlacement place_ranks(std::optional<int> requested_per_node, bool no_gpu, int gpu_count,
                            const std::optional<std::string>& gpu_request = std::nullopt);

}  // namespace tnt::cli
