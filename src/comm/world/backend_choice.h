// Private: which backend carries a group's collectives, MPI or NCCL, as a
// pure function of what this rank knows, so every branch and message is
// unit-tested on machines without a GPU.
//
// The rule: NCCL when the model trains on CUDA, this build has
// the NCCL backend and no other rank uses this rank's GPU (NCCL refuses two
// ranks on one GPU: "Duplicate GPU detected"); MPI otherwise. A GPU is told
// apart as NCCL does: its host and its PCI bus id, not its index, so ranks
// that each see one GPU of their own (Slurm's --gpus-per-task=1, or
// CUDA_VISIBLE_DEVICES set per rank) have NCCL.
// TNT_COMM_BACKEND=mpi|nccl forces a choice; a forced choice that cannot
// work is an error that says why and what to do, never a silent fallback.
// Ranks decide locally, then agree (world_backend.cpp): NCCL only if every
// rank chose it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tarantella/base/config.h>

namespace tnt::comm {

enum class BackendKind { Mpi, Nccl };

/// "mpi" or "nccl".
const char* to_string(BackendKind kind);

/// What a rank knows when the world group is made.
struct BackendFacts {
  /// TNT_COMM_BACKEND (Config::comm_backend): Auto, Mpi or Nccl.
  CommBackend requested = CommBackend::Auto;
  /// Whether this rank's model will live on a GPU (TNT_USE_GPU and a CUDA
  /// LibTorch that sees a device: the engine's device rule).
  bool model_on_cuda = false;
  /// Whether this build has the NCCL backend (nccl_built()).
  bool nccl_built = false;
  /// The NCCL library loaded (ncclGetVersion: 22809 for 2.28.9); 0 when not
  /// known (not built).
  int nccl_version = 0;
  /// The GPU this rank's model would use, as NCCL names it (its PCI bus id,
  /// "0000:3b:00.0"); empty without one.
  std::string gpu;
  /// The other ranks of the job (world ranks) whose GPU is this one: the
  /// same host and the same bus id (ranks_sharing_gpu).
  std::vector<int> sharing_gpu;
};

/// The ranks other than `rank` whose key equals its key (index = rank; a
/// key names a host and a GPU on it, 0 = no GPU, which nobody shares).
/// Example: ranks_sharing_gpu({7, 7, 9, 0, 0}, 0) -> {1};
/// ranks_sharing_gpu({7, 7, 9, 0, 0}, 3) -> {}.
std::vector<int> ranks_sharing_gpu(const std::vector<std::int64_t>& keys, int rank);

/// The key of a GPU for ranks_sharing_gpu: a 64-bit hash of the host's
/// identity and the GPU's bus id, never 0; 0 for an empty bus id.
std::int64_t gpu_key(const std::string& host, const std::string& bus_id);

/// The CUDA device index of a rank's GPU: its world local rank modulo the
/// GPUs it sees (one GPU per process under Slurm's --gpus-per-task=1: 0).
/// The one rule for the engine, the runtime and the NCCL communicator.
int rank_gpu_index(int world_local_rank, int visible_gpus);

/// The CUDA device index this rank trains on (rank_gpu_index over the GPUs
/// torch sees), or none: `use_gpu` false (TNT_USE_GPU=false, --no-gpu), or
/// no GPU. The engine's device, the runtime's current device and the NCCL
/// vote's GPU.
std::optional<int> rank_training_gpu(bool use_gpu, int world_local_rank);

/// The job's warning when ranks share GPUs and nobody said they should
/// (`intended`: TNT_RANKS_PER_GPU > 1, the launcher's --ranks-per-gpu),
/// from every rank's key (ranks_sharing_gpu); "" when there is nothing to
/// warn about. The same on every rank, so rank 0 tells it whichever ranks
/// share.
/// Example: sharing_warning({7, 7, 9, 9, 5}, false) names "ranks 0,1" and
/// "ranks 2,3"; sharing_warning({7, 7}, true) -> "".
std::string sharing_warning(const std::vector<std::int64_t>& keys, bool intended);

/// The choice, with the reason in words for the log.
struct BackendChoice {
  BackendKind kind = BackendKind::Mpi;
  std::string reason;
};

/// Throws tnt::Error naming the variable, the facts and the fix when
/// TNT_COMM_BACKEND=nccl cannot work here.
BackendChoice choose_backend(const BackendFacts& facts);

/// A rank's vote, as it travels in the agreement's allgather.
enum class BackendVote : int { Mpi = 0, Nccl = 1, Failed = 2 };

/// The group's backend from every rank's vote (index = rank), the same on
/// every rank: NCCL only where every rank chose it, else MPI with the
/// reason naming the ranks that chose MPI. Throws tnt::Error naming the
/// ranks that Failed (forced NCCL they cannot use; each says why itself).
/// `mine`: this rank's own choice (its reason is kept where it wins).
BackendChoice settle_backend(const std::vector<BackendVote>& votes, const BackendChoice& mine);

}  // namespace tnt::comm
