// The transport under a ProcessGroup. A backend moves tensors between the
// ranks of one communicator and checks, before every payload, that all ranks
// called the same collective with the same shapes (check_table's verdict,
// raised on every rank). It is driven by exactly one thread — its group's
// engine — so it needs no locking of its own.
//
// Today: MPI (the world and its splits) and an in-process backend whose
// ranks are threads of one process (unit tests without MPI). A new transport
// (NCCL, gloo) is a new implementation of this interface, not a rewrite of
// the layers above.
//
// Point-to-point transfers (send, recv) are the exception to "one thread":
// they are posted at once on whatever thread calls them and driven by the
// thread that waits on them, never by the engine, so a backend keeps their
// state behind a lock of its own (see P2pWork).
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include <tarantella/comm/reduce_op.h>

namespace tnt::comm {

/// One point-to-point transfer as the caller describes it: `tensor` is sent,
/// or received into (preallocated, as in c10d); `peer` is the other rank of
/// the group; `tag` separates independent streams between one pair of
/// ranks; `what` names the transfer in errors ("stage 1 activations").
struct Transfer {
  torch::Tensor tensor;
  int peer = -1;
  int tag = 0;
  std::string what;
};

/// A posted send or recv. It moves only while some thread of this rank
/// tests or waits on it (or on another transfer of the same group): there is
/// no progress thread. Both calls are thread-safe and may be repeated.
class P2pWork {
 public:
  virtual ~P2pWork() = default;
  /// Drives every transfer of the group a little, without blocking; true
  /// once this one has finished (successfully or not).
  virtual bool test() = 0;
  /// Blocks until this transfer has finished, waiting as a neighbour waits
  /// (poll.h): spins briefly, then gives its core up. Throws MismatchError
  /// when sender and receiver disagree on dtype or shape, TimeoutError when
  /// the peer does not take part within the group's timeout.
  virtual void wait() = 0;
};

/// One rank's end of a communicator. Every collective is called by every
/// rank of the group in the same order; all run on the group's engine thread.
class Backend {
 public:
  virtual ~Backend() = default;

  /// "mpi", "in-process", ...
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Rank and count among the group's ranks on the same host.
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  /// True after a timeout: the transport's state is undefined, the job must end.
  virtual bool broken() const = 0;

  // The collectives, with the semantics documented on ProcessGroup.
  virtual torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op) = 0;
  virtual torch::Tensor broadcast(torch::Tensor tensor, int root) = 0;
  virtual torch::Tensor allgather(torch::Tensor tensor) = 0;
  virtual torch::Tensor allgatherv(torch::Tensor tensor) = 0;
  virtual torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op) = 0;
  virtual void barrier() = 0;
  /// The shutdown check: fails if another rank is still in a collective.
  virtual void finalize_check() = 0;
  /// Collective over this backend: the ranks with the same non-negative
  /// `color` form a new backend, ordered by (key, rank); a negative color
  /// gives nullptr (this rank joins none).
  virtual std::unique_ptr<Backend> split(int color, int key) = 0;

  // Point-to-point, with the semantics documented on ProcessGroup::isend.
  // Called from any thread, concurrently with the collectives; bad
  // arguments throw at once.
  virtual std::shared_ptr<P2pWork> send(const Transfer& transfer) = 0;
  virtual std::shared_ptr<P2pWork> recv(const Transfer& transfer) = 0;
};

}  // namespace tnt::comm
