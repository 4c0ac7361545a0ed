// The GPU rule; see device_placement.h.
#include "device_placement.h"

namespace tnt::cli {
namespace {

std::string plural(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

DevicePlacement on_cpu(int ranks, std::string warning) {
  return DevicePlacement{ranks, false, std::move(warning)};
}

}  // namespace

DevicePlacement place_ranks(std::optional<int> requested_per_node, bool no_gpu, int gpu_count) {
  if (no_gpu) return on_cpu(requested_per_node.value_or(1), "");
  if (!requested_per_node) {
    if (gpu_count == 0) {
      return on_cpu(1,
                    "no GPU found; starting 1 rank per node on the CPU "
                    "(use -n or --n-per-node for more ranks, --no-gpu to silence this)");
    }
    return DevicePlacement{gpu_count, true, ""};
  }
  const int requested = *requested_per_node;
  if (gpu_count == 0) {
    return on_cpu(requested, "no GPU found; starting " + plural(requested, "rank") +
                                 " per node on the CPU (use --no-gpu to silence this)");
  }
  if (requested > gpu_count) {
    return on_cpu(requested, plural(requested, "rank") + " per node requested but this node has " +
                                 plural(gpu_count, "GPU") +
                                 "; all ranks run on the CPU (start at most " +
                                 std::to_string(gpu_count) +
                                 " ranks per node to use the GPUs, or --no-gpu to silence this)");
  }
  return DevicePlacement{requested, true, ""};
}

}  // namespace tnt::cli
