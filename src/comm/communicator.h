// Private: the only owner of MPI communicators. Runs collectives on the
// calling thread (the CommEngine's thread); each one is a handshake (see
// handshake.h) followed by the payload as a blocking MPI collective on a
// separate communicator, which runs at the MPI library's full speed.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>

#include <torch/types.h>

#include <tarantella/comm/collectives.h>

#include "comm/dtype.h"
#include "comm/handshake.h"

namespace tnt::comm {

/// Elements per MPI call: large collectives go in pieces of this many. MPI
/// counts are int, so large payloads go in pieces anyway; pieces of 4 MiB (of
/// float32) also reduce faster than one huge message over shared memory (an
/// 80 MB gradient: 21 ms in 4 MiB pieces vs 34 ms whole; bench/train_step).
/// The runtime sizes OpenMPI's TCP eager limit after it (runtime.cpp).
constexpr std::int64_t kMaxChunk = 1LL << 20;

class Communicator {
 public:
  /// Duplicates `world` (MPI must be initialized) so that our traffic never
  /// matches a user's own MPI calls.
  Communicator(MPI_Comm world, double timeout_seconds);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  /// True after a timeout: MPI state is undefined and the job must abort.
  bool broken() const { return handshake_.broken(); }

  torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op);
  torch::Tensor broadcast(torch::Tensor tensor, int root);
  torch::Tensor allgather(torch::Tensor tensor);
  torch::Tensor allgatherv(torch::Tensor tensor);
  torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op);
  void barrier();
  /// The shutdown handshake: fails if another rank is still in a collective.
  void finalize_check();

 private:
  /// Runs the handshake; when `local_error` is set, raises it after the
  /// others were told (so no rank waits for this one).
  std::vector<Descriptor> agree(Collective kind, const torch::Tensor* tensor,
                                std::optional<ReduceOp> op, int root,
                                const std::optional<std::string>& local_error);
  std::optional<std::string> validate(const torch::Tensor& tensor,
                                      std::optional<ReduceOp> op) const;

  MPI_Comm data_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  std::int64_t seq_ = 0;
  MpiTypes types_;
  Handshake handshake_;
};

}  // namespace tnt::comm
