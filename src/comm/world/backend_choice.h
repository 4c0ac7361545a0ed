// Private: which backend carries a group's collectives, MPI or NCCL, as a
// pure function of what this rank knows, so every branch and message is
// unit-tested on machines without a GPU.
//
// The rule: NCCL when the model trains on CUDA, this build has
// the NCCL backend and every rank on the host has a GPU of its own (NCCL
// refuses two ranks on one GPU: "Duplicate GPU detected"); MPI otherwise.
// TNT_COMM_BACKEND=mpi|nccl forces a choice; a forced choice that cannot
// work is an error that says why and what to do, never a silent fallback.
// Ranks decide locally, then agree (world_backend.cpp): NCCL only if every
// rank chose it.
#pragma once

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
  /// Ranks of the job on this host, and the GPUs this rank can see.
  int local_ranks = 1;
  int visible_gpus = 0;
};

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
