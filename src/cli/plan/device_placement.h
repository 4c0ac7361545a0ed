// Whether ranks run on GPUs or CPUs, and how many start per node.
//
// The rule (from the Tarantella manual, §6.2): without a rank count, start
// one rank per GPU of the launching node, or one CPU rank per node where
// there is no GPU; with -n N, N ranks per node, on GPUs when the node has at
// least N. A CPU run on a node without GPUs says nothing: nothing GPU-related
// was asked for, and the CPU is all there is. Only when GPUs exist but -n
// asks for more ranks than there are GPUs does the launcher warn that all
// ranks run on the CPU (GPUs are shared between ranks only when asked).
// --no-gpu chooses the CPU silently.
//
// --ranks-per-gpu K shares each GPU between K ranks on purpose (tests, small
// models): a node then holds K x its GPU count ranks on the GPU, without -n
// that many start, and the ranks' collectives go through host memory over
// MPI (NCCL refuses two ranks on one GPU). K > 1 on a node without a GPU is
// an error: the user asked for GPUs.
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
  std::string warning;    ///< empty when there is nothing to warn about
  int ranks_per_gpu = 1;  ///< as asked; meaningful only with use_gpu
};

/// `requested_per_node` comes from -n or --n-per-node; `gpu_count` is the
/// launching node's (all nodes are assumed alike); `gpu_request` is the value
/// the user gave TNT_USE_GPU with -x, if any. Throws LauncherError when the
/// request cannot be met (no GPU, fewer GPUs than ranks, --no-gpu) or is not
/// a boolean. `ranks_per_gpu` is --ranks-per-gpu (at least 1).
/// Example: `place_ranks(std::nullopt, false, 4)` -> {4, true, ""};
/// `place_ranks(std::nullopt, false, 1, std::nullopt, 2)` -> {2, true, "", 2}.
DevicePlacement place_ranks(std::optional<int> requested_per_node, bool no_gpu, int gpu_count,
                            const std::optional<std::string>& gpu_request = std::nullopt,
                            int ranks_per_gpu = 1);

/// A boolean variable's value as the ranks read it (base/config.cpp: 1/0,
/// true/false, yes/no, on/off, any case); nullopt for anything else.
std::optional<bool> boolean_text(const std::string& raw);

/// The user's -x TNT_USE_GPU as the ranks will read it (base/config.cpp
/// accepts the same words): true, false, or nullopt for "auto" (the rank
/// decides). Throws LauncherError for anything else.
std::optional<bool> parse_gpu_request(const std::string& raw);

/// The GPU flags read together, before any placement: the parsed -x
/// TNT_USE_GPU (nullopt: none, or auto). Throws LauncherError for
/// --ranks-per-gpu below 1, or above 1 with --no-gpu or -x TNT_USE_GPU=false
/// (sharing GPUs and running on the CPU), and for -x TNT_USE_GPU=true with
/// --no-gpu. Both place_ranks and a Slurm job's placement start with it.
std::optional<bool> check_gpu_flags(bool no_gpu, const std::optional<std::string>& gpu_request,
                                    int ranks_per_gpu);

/// "GPU (one GPU per rank)" or "GPU (2 ranks per GPU, collectives staged
/// through host memory over MPI)", or "CPU": for --dry-run's notes.
std::string describe_device(bool use_gpu, int ranks_per_gpu);

}  // namespace tnt::cli
