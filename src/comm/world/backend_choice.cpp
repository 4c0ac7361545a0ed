#include "comm/world/backend_choice.h"

#include <algorithm>
#include <sstream>

#include <torch/cuda.h>

#include <tarantella/base/env_contract.h>
#include <tarantella/base/error.h>

#include "comm/nccl/nccl_factory.h"

namespace tnt::comm {
namespace {

// "rank 3" or "ranks 1,2".
std::string ranks_text(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  return out.str();
}

// Why NCCL cannot serve this rank, or "" when it can.
std::string nccl_obstacle(const BackendFacts& f) {
  if (!f.nccl_built) {
    return "this build of Tarantella has no NCCL backend (built against a LibTorch without "
           "CUDA, or configured without NCCL)";
  }
  if (f.nccl_version > 0 && f.nccl_version < kMinNcclVersion) {
    return ::tnt::detail::concat("the NCCL loaded is version ", f.nccl_version / 10000, ".",
                                 f.nccl_version / 100 % 100, ".", f.nccl_version % 100,
                                 ", and the NCCL backend needs 2.27 or later (several "
                                 "non-blocking communicators in progress on one thread)");
  }
  if (!f.model_on_cuda) {
    return "this rank trains on the CPU (TNT_USE_GPU=false, or LibTorch sees no GPU), and NCCL "
           "moves GPU memory only";
  }
  if (!f.sharing_gpu.empty()) {
    return ::tnt::detail::concat("this rank's GPU (", f.gpu, ") is also used by ",
                                 ranks_text(f.sharing_gpu), ", and NCCL needs one GPU per rank");
  }
  return "";
}

// The fix for each obstacle, in the order nccl_obstacle tests them.
std::string nccl_fix(const BackendFacts& f) {
  if (!f.nccl_built) {
    return ::tnt::detail::concat("rebuild against a CUDA build of torch with -DTNT_WITH_NCCL=ON, "
                                 "or use ", env::kCommBackend, "=mpi");
  }
  if (f.nccl_version > 0 && f.nccl_version < kMinNcclVersion) {
    return ::tnt::detail::concat("install a newer NCCL (a current pip torch brings one in its "
                                 "nvidia-nccl wheel), or use ", env::kCommBackend, "=mpi");
  }
  if (!f.model_on_cuda) {
    return ::tnt::detail::concat("unset ", env::kCommBackend, " or set it to mpi, or train on a "
                                 "GPU (TNT_USE_GPU=true on a node with one)");
  }
  return ::tnt::detail::concat("start one rank per GPU (the launcher's default without -n; "
                               "under Slurm, a GPU per task), or share GPUs on purpose with "
                               "--ranks-per-gpu and ", env::kCommBackend, "=mpi");
}

std::vector<int> ranks_voting(const std::vector<BackendVote>& votes, BackendVote vote) {
  std::vector<int> out;
  for (int r = 0; r < static_cast<int>(votes.size()); ++r) {
    if (votes[static_cast<std::size_t>(r)] == vote) out.push_back(r);
  }
  return out;
}

}  // namespace

const char* to_string(BackendKind kind) {
  return kind == BackendKind::Nccl ? "nccl" : "mpi";
}

BackendChoice choose_backend(const BackendFacts& facts) {
  if (facts.requested == CommBackend::Mpi) {
    return {BackendKind::Mpi, ::tnt::detail::concat(env::kCommBackend, "=mpi")};
  }
  const std::string obstacle = nccl_obstacle(facts);
  if (facts.requested == CommBackend::Nccl) {
    TNT_CHECK(obstacle.empty(), env::kCommBackend, "=nccl, but ", obstacle, ": ",
              nccl_fix(facts));
    return {BackendKind::Nccl,
            ::tnt::detail::concat(env::kCommBackend, "=nccl (this rank's GPU: ", facts.gpu, ")")};
  }
  if (!obstacle.empty()) return {BackendKind::Mpi, obstacle};
  return {BackendKind::Nccl, ::tnt::detail::concat("the model is on CUDA and no other rank uses "
                                                   "this rank's GPU (", facts.gpu, ")")};
}

std::vector<int> ranks_sharing_gpu(const std::vector<std::int64_t>& keys, int rank) {
  std::vector<int> out;
  const std::int64_t mine = keys.at(static_cast<std::size_t>(rank));
  if (mine == 0) return out;
  for (int r = 0; r < static_cast<int>(keys.size()); ++r) {
    if (r != rank && keys[static_cast<std::size_t>(r)] == mine) out.push_back(r);
  }
  return out;
}

std::int64_t gpu_key(const std::string& host, const std::string& bus_id) {
  if (bus_id.empty()) return 0;
  // FNV-1a over "host\0bus": two GPUs collide with odds of 2^-64.
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (unsigned char c : host) mix(c);
  mix(0);
  for (unsigned char c : bus_id) mix(c);
  const auto key = static_cast<std::int64_t>(h);
  return key == 0 ? 1 : key;
}

int rank_gpu_index(int world_local_rank, int visible_gpus) {
  return visible_gpus > 0 ? world_local_rank % visible_gpus : 0;
}

std::optional<int> rank_training_gpu(bool use_gpu, int world_local_rank) {
  if (!use_gpu || !torch::cuda::is_available()) return std::nullopt;
  return rank_gpu_index(world_local_rank, static_cast<int>(torch::cuda::device_count()));
}

std::string sharing_warning(const std::vector<std::int64_t>& keys, bool intended) {
  if (intended) return "";
  constexpr std::size_t kNamed = 4;  // groups named; the rest are counted
  std::vector<std::vector<int>> groups;
  std::vector<bool> seen(keys.size(), false);
  for (int r = 0; r < static_cast<int>(keys.size()); ++r) {
    if (seen[static_cast<std::size_t>(r)] || keys[static_cast<std::size_t>(r)] == 0) continue;
    std::vector<int> group{r};
    for (int other : ranks_sharing_gpu(keys, r)) {
      group.push_back(other);
      seen[static_cast<std::size_t>(other)] = true;
    }
    if (group.size() > 1) groups.push_back(std::move(group));
  }
  if (groups.empty()) return "";
  std::ostringstream out;
  for (std::size_t g = 0; g < std::min(groups.size(), kNamed); ++g) {
    out << (g ? "; " : "") << ranks_text(groups[g]) << (g ? " share another" : " share a GPU");
  }
  if (groups.size() > kNamed) out << "; and " << groups.size() - kNamed << " more shared GPU(s)";
  out << ": ranks that share a GPU take turns on it, and the job's collectives go through host "
         "memory over MPI instead of NCCL. Start one rank per GPU (the launcher's default "
         "without -n; under Slurm, a GPU per task), or share GPUs on purpose with "
         "--ranks-per-gpu K";
  return out.str();
}

}  // namespace tnt::comm

namespace tnt::comm {

BackendChoice settle_backend(const std::vector<BackendVote>& votes, const BackendChoice& mine) {
  const std::vector<int> failed = ranks_voting(votes, BackendVote::Failed);
  TNT_CHECK(failed.empty(), "the transport of collectives (", env::kCommBackend,
            ") could not be chosen: ", ranks_text(failed),
            " failed (see the error there): fix that, or use ", env::kCommBackend, "=mpi");
  const std::vector<int> mpi = ranks_voting(votes, BackendVote::Mpi);
  if (mpi.empty()) return mine;
  if (mine.kind == BackendKind::Mpi) return mine;
  return {BackendKind::Mpi, ::tnt::detail::concat(ranks_text(mpi),
                                                  " cannot use NCCL, and a group has one "
                                                  "transport (run with TNT_LOG_LEVEL=INFO to "
                                                  "see why there)")};
}

}  // namespace tnt::comm
