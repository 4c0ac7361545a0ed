// The GPU rule; see device_placement.h.
#include "plan/device_placement.h"

#include <algorithm>
#include <cctype>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

std::string plural(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

DevicePlacement on_cpu(int ranks, std::string warning) {
  return DevicePlacement{ranks, false, std::move(warning), 1};
}

// "4 GPUs" or "4 GPUs x 2 ranks each (--ranks-per-gpu 2)": the capacity.
std::string capacity_text(int gpu_count, int ranks_per_gpu) {
  std::string text = plural(gpu_count, "GPU");
  if (ranks_per_gpu > 1) {
    text += " x " + std::to_string(ranks_per_gpu) + " ranks each (--ranks-per-gpu " +
            std::to_string(ranks_per_gpu) + ")";
  }
  return text;
}

}  // namespace

namespace {
// Lower case, blanks dropped: how the ranks' config compares such values.
std::string compact_lower(const std::string& raw) {
  std::string v;
  for (unsigned char c : raw) {
    if (!std::isspace(c)) v.push_back(static_cast<char>(std::tolower(c)));
  }
  return v;
}
}  // namespace

std::optional<bool> boolean_text(const std::string& raw) {
  const std::string v = compact_lower(raw);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

std::optional<bool> parse_gpu_request(const std::string& raw) {
  if (const auto value = boolean_text(raw)) return value;
  if (compact_lower(raw) == "auto") return std::nullopt;
  throw LauncherError("-x TNT_USE_GPU='" + raw +
                      "' is not a boolean: use true (a GPU for every rank, or an error), false "
                      "(the CPU) or auto, or drop it and let the launcher choose");
}

namespace {

// -x TNT_USE_GPU=true (without --no-gpu: check_gpu_flags): every rank gets a
// GPU of its own, or nothing starts.
DevicePlacement demand_gpus(std::optional<int> requested_per_node, int gpu_count,
                            const std::string& raw, int ranks_per_gpu) {
  const std::string request = "-x TNT_USE_GPU=" + raw;
  if (gpu_count == 0) {
    throw LauncherError(request +
                        " asks for a GPU on every rank, but this node has no GPU (`nvidia-smi "
                        "-L` lists none): drop " +
                        request + " to train on the CPU, or start the job on a node with GPUs");
  }
  const int capacity = gpu_count * ranks_per_gpu;
  const int ranks = requested_per_node.value_or(capacity);
  if (ranks > capacity) {
    throw LauncherError(request + " asks for a GPU on every rank, but " + plural(ranks, "rank") +
                        " per node are requested and this node has " +
                        capacity_text(gpu_count, ranks_per_gpu) + ": start at most " +
                        std::to_string(capacity) + " ranks per node, share the GPUs with " +
                        "--ranks-per-gpu K, or drop " + request + " to run them all on the CPU");
  }
  return DevicePlacement{ranks, true, "", ranks_per_gpu};
}

}  // namespace

std::optional<bool> check_gpu_flags(bool no_gpu, const std::optional<std::string>& gpu_request,
                                    int ranks_per_gpu) {
  if (ranks_per_gpu < 1) {
    throw LauncherError("--ranks-per-gpu " + std::to_string(ranks_per_gpu) +
                        ": the number of ranks per GPU must be at least 1");
  }
  const std::optional<bool> demand = gpu_request ? parse_gpu_request(*gpu_request) : std::nullopt;
  if (ranks_per_gpu > 1 && (no_gpu || demand == false)) {
    throw LauncherError("--ranks-per-gpu " + std::to_string(ranks_per_gpu) + " shares GPUs, but " +
                        (no_gpu ? std::string("--no-gpu") : "-x TNT_USE_GPU=" + *gpu_request) +
                        " runs every rank on the CPU: drop one of the two");
  }
  if (demand == true && no_gpu) {
    throw LauncherError("-x TNT_USE_GPU=" + *gpu_request +
                        " asks for a GPU on every rank and --no-gpu for none: drop one "
                        "of the two");
  }
  return demand;
}

DevicePlacement place_ranks(std::optional<int> requested_per_node, bool no_gpu, int gpu_count,
                            const std::optional<std::string>& gpu_request, int ranks_per_gpu) {
  const std::optional<bool> demand = check_gpu_flags(no_gpu, gpu_request, ranks_per_gpu);
  if (ranks_per_gpu > 1 && gpu_count == 0) {
    throw LauncherError("--ranks-per-gpu " + std::to_string(ranks_per_gpu) +
                        " shares GPUs between ranks, but this node has no GPU (`nvidia-smi -L` "
                        "lists none): drop --ranks-per-gpu to train on the CPU, or start the job "
                        "on a node with GPUs");
  }
  if (demand == true) {
    return demand_gpus(requested_per_node, gpu_count, *gpu_request, ranks_per_gpu);
  }
  if (no_gpu || demand == false) return on_cpu(requested_per_node.value_or(1), "");
  // No GPU installed and none asked for: the CPU run is the only run there
  // is, so there is nothing to warn about (manual §6.2).
  if (gpu_count == 0) return on_cpu(requested_per_node.value_or(1), "");
  const int capacity = gpu_count * ranks_per_gpu;
  const int requested = requested_per_node.value_or(capacity);
  if (requested > capacity) {
    if (ranks_per_gpu > 1) {
      // Sharing was asked for: a CPU run instead would be a silent surprise.
      throw LauncherError(plural(requested, "rank") + " per node requested, but this node has " +
                          capacity_text(gpu_count, ranks_per_gpu) + ": start at most " +
                          std::to_string(capacity) + " ranks per node, or raise --ranks-per-gpu");
    }
    return on_cpu(requested, plural(requested, "rank") + " per node requested but this node has " +
                                 plural(gpu_count, "GPU") +
                                 "; all ranks run on the CPU (start at most " +
                                 std::to_string(gpu_count) +
                                 " ranks per node to use the GPUs, --ranks-per-gpu K to share "
                                 "them, or --no-gpu to silence this)");
  }
  return DevicePlacement{requested, true, "", ranks_per_gpu};
}

std::string describe_device(bool use_gpu, int ranks_per_gpu) {
  if (!use_gpu) return "CPU";
  if (ranks_per_gpu <= 1) return "GPU (one GPU per rank)";
  return "GPU (" + std::to_string(ranks_per_gpu) +
         " ranks per GPU, collectives staged through host memory over MPI)";
}

}  // namespace tnt::cli
