// Whether ranks run on GPUs or CPUs, and how many start per node.
//
// The rule (from the Tarantella manual): without a rank count, start one rank
// per GPU of the launching node; with no GPU, warn and start one CPU rank per
// node. When more ranks per node are requested than there are GPUs, warn and
// run all ranks on the CPU (GPUs are never shared between ranks). --no-gpu
// chooses the CPU silently.
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
/// launching node's (all nodes are assumed alike).
/// Example: `place_ranks(std::nullopt, false, 4)` -> {4, true, ""}.
DevicePlacement place_ranks(std::optional<int> requested_per_node, bool no_gpu, int gpu_count);

}  // namespace tnt::cli
