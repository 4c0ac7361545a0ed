// Private: the MPI backend of a ProcessGroup, the only owner of MPI
// communicators. Runs collectives on the calling thread (the group's engine
// thread, or a caller that found the engine idle); each one is a consistency
// check followed by the payload on a separate communicator: a blocking MPI
// collective, which runs at the MPI library's full speed, except for
// allreduce, reduce_scatter and allgather(v) in power-of-two groups, which
// go as our own point-to-point exchange in 1 MiB pieces, waited on with our
// wait policy (see exchange_allreduce). The check is a
// fingerprint exchange among the peers when every rank has this collective's
// descriptor in its response cache (response_cache.h), else the full
// handshake through the master (handshake.h).
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/backend.h>

#include "comm/handshake.h"
#include "comm/payload_watchdog.h"
#include "comm/mpi_types.h"
#include "comm/response_cache.h"

namespace tnt::comm {

/// Elements per MPI call: large collectives go in pieces of this many. MPI
/// counts are int, so large payloads go in pieces anyway; pieces of 4 MiB (of
/// float32) also reduce faster than one huge message over shared memory (an
/// 80 MB gradient: 21 ms in 4 MiB pieces vs 34 ms whole; bench/train_step).
/// The runtime sizes OpenMPI's TCP eager limit after it (runtime.cpp).
constexpr std::int64_t kMaxChunk = 1LL << 20;

class MpiBackend final : public Backend {
 public:
  /// Duplicates `comm` (MPI must be initialized) so that our traffic never
  /// matches a user's own MPI calls. `threads_multiple`: MPI runs at
  /// MPI_THREAD_MULTIPLE, so groups split from this one may have engine
  /// threads of their own.
  MpiBackend(MPI_Comm comm, double timeout_seconds, bool threads_multiple);
  ~MpiBackend() override;
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  bool broken() const override { return handshake_.broken(); }

  torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op) override;
  torch::Tensor broadcast(torch::Tensor tensor, int root) override;
  torch::Tensor allgather(torch::Tensor tensor) override;
  torch::Tensor allgatherv(torch::Tensor tensor) override;
  torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op) override;
  void barrier() override;
  void finalize_check() override;
  std::unique_ptr<Backend> split(int color, int key) override;

 private:
  /// Runs the handshake; when `local_error` is set, raises it after the
  /// others were told (so no rank waits for this one).
  struct Agreement {
    std::vector<Descriptor> table;  ///< empty unless the full handshake ran
    bool payload_done = false;      ///< `small` was reduced on the way
  };
  /// With `small`, a cached collective may be complete on return (see
  /// Handshake::Piggyback), its result in small->data.
  Agreement agree(Collective kind, const torch::Tensor* tensor, std::optional<ReduceOp> op,
                  int root, const std::optional<std::string>& local_error,
                  Handshake::Piggyback* small = nullptr);
  /// agree() for an allreduce: where the handshake carries payloads, a
  /// tensor of at most Handshake::kMaxCarriedOneHost (kMaxCarriedHosts when
  /// the group spans hosts) on the CPU rides along.
  /// True when the allreduce is complete; false when its payload must still
  /// run.
  bool agree_carrying(torch::Tensor& tensor, ReduceOp op,
                      const std::optional<std::string>& error);
  /// The payload ran past the timeout: finds the ranks that no longer
  /// answer, says so on stderr and ends this process (exit status 1).
  [[noreturn]] void payload_timed_out(const PayloadWatchdog::Payload& payload);
  /// The payload of an allreduce in a power-of-two group, in pieces of
  /// kMaxExchangedBytes: MPI_Isend/MPI_Irecv between partners, waited on
  /// with the engine's policy (poll.h) instead of inside a blocking
  /// MPI_Allreduce, which spins without ever yielding while a peer's engine
  /// thread waits for a core (2 ranks on 2 cores, each with a training
  /// thread: issue 15). Recursive doubling up to kMaxDoubledBytes,
  /// recursive halving and doubling above. Each element's result is
  /// computed as (lower rank's) op (higher rank's) at every level, so all
  /// ranks end bitwise equal.
  void exchange_allreduce(char* data, int count, std::size_t elem, MPI_Datatype type,
                          MPI_Op op);
  /// One round: sends `send_bytes` from `send` to `partner` and receives
  /// `recv_bytes` from it into `recv`.
  void exchange_with(int partner, const char* send, int send_bytes, char* recv, int recv_bytes);
  /// One round of a large exchange: sends `send_bytes` from `send` to
  /// `partner` and receives `recv_bytes` into `recv`, both in pieces of
  /// kMaxExchangedBytes, all posted at once; `arrived(offset, bytes)` runs
  /// for each received piece, in order, as soon as it is in (while later
  /// pieces are still on the wire: a reduction runs on bytes still in
  /// cache). Waited on with the engine's policy; every completed piece
  /// restarts the payload watchdog's clock.
  void exchange_pieces(int partner, const char* send, std::int64_t send_bytes, char* recv,
                       std::int64_t recv_bytes,
                       const std::function<void(std::int64_t, std::int64_t)>& arrived,
                       const char* kind, std::int64_t elements);
  /// The payloads of reduce_scatter and allgather(v) in power-of-two
  /// groups, as the halves of exchange_allreduce's recursive halving and
  /// doubling. `block_start` has size_ + 1 entries: rank r's block is
  /// elements [block_start[r], block_start[r + 1]). Reduce-scatter reduces
  /// `in` (left as it is) and writes this rank's block to `out`; each
  /// element is reduced by one rank only, the sum tree being exchange_allreduce's
  /// (partners rank ^ N/2 first). Allgather fills `out` (this rank's block
  /// already in place) with every rank's block.
  void exchange_reduce_scatter(const char* in, const std::vector<std::int64_t>& block_start,
                               std::size_t elem, MPI_Datatype type, MPI_Op op, char* out);
  void exchange_allgather(char* out, const std::vector<std::int64_t>& block_start,
                          std::size_t elem, const char* kind);

 public:
  /// Pieces up to this size go whole (one round trip per round); above, in
  /// halves (bench/allreduce at 2 ranks on one host, whole buffers against
  /// MPI_Allreduce: 1.04-1.07x at 64 KiB, 0.90x at 256 KiB, 0.89-0.92x at
  /// 1 MiB, where MPI's tuned algorithm sends halves).
  static constexpr std::size_t kMaxDoubledBytes = 64 * 1024;
  /// The same when the group spans hosts: halving at 256 KiB measured
  /// 0.76-0.91x of MPI_Allreduce between two simulated 10 Gbit/s hosts (two
  /// round trips where a whole buffer takes one).
  static constexpr std::size_t kMaxDoubledBytesHosts = 256 * 1024;
  /// exchange_allreduce's piece. One halving-doubling exchange of a whole
  /// 4 MiB piece measured 0.72-0.82x of MPI_Allreduce's pipelined
  /// algorithm; the same 4 MiB as four 1 MiB pieces 0.96-0.98x (they stay
  /// in cache), 16 MiB 0.98-1.00x, 64 MiB 2.3x (MPI's one call per 4 MiB
  /// falls out of cache there too).
  static constexpr std::size_t kMaxExchangedBytes = 1 << 20;

 private:

  MPI_Comm data_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  MPI_Comm fast_ = MPI_COMM_NULL;  ///< the fingerprint exchange's (handshake.h)
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  double timeout_seconds_;
  bool threads_multiple_;
  std::int64_t seq_ = 0;
  MpiTypes types_;
  Handshake handshake_;
  ResponseCache cache_;
  std::vector<char> staging_;  ///< a small allreduce's elements on the way
  std::vector<char> incoming_;  ///< exchange_allreduce's partner data
  std::vector<char> reduced_;  ///< exchange_reduce_scatter's partial sums
  PayloadWatchdog watchdog_;  // last: its thread stops before the rest goes
};

}  // namespace tnt::comm
