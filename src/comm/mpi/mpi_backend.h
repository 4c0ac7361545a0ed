// Private: the MPI backend of a ProcessGroup, the only owner of MPI
// communicators. Runs collectives on the calling thread (the group's engine
// thread, or a caller that found the engine idle); each one is a consistency
// check followed by the payload on a separate communicator: a blocking MPI
// collective, which runs at the MPI library's full speed, except for
// allreduce, reduce_scatter and allgather(v) in power-of-two groups, which
// go as our own point-to-point exchange in 1 MiB pieces, waited on with our
// wait policy (exchange.h, one file per algorithm; the backend itself only
// dispatches and makes the plain MPI calls). The check is a
// fingerprint exchange among the peers when every rank has this collective's
// descriptor in its response cache (response_cache.h), else the full
// handshake through the master (handshake.h).
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/backend.h>

#include "comm/chunks.h"
#include "comm/mpi/exchange.h"
#include "comm/check/handshake.h"
#include "comm/mpi/host_staging.h"
#include "comm/check/payload_watchdog.h"
#include "comm/mpi/mpi_p2p.h"
#include "comm/mpi/mpi_types.h"
#include "comm/mpi/response_cache.h"
#include "comm/check/stack_service.h"

namespace tnt::comm {

class MpiBackend final : public Backend {
 public:
  /// Duplicates `comm` (MPI must be initialized) so that our traffic never
  /// matches a user's own MPI calls. `threads_multiple`: MPI runs at
  /// MPI_THREAD_MULTIPLE, so groups split from this one may have engine
  /// threads of their own. `stacks`: asked where the missing ranks are when
  /// a collective times out (none: the report does not say); it outlives
  /// this backend and the groups split from it.
  MpiBackend(MPI_Comm comm, double timeout_seconds, bool threads_multiple,
             const StackService* stacks = nullptr);
  ~MpiBackend() override;
  MpiBackend(const MpiBackend&) = delete;
  MpiBackend& operator=(const MpiBackend&) = delete;

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  bool broken() const override { return handshake_.broken() || p2p_->broken(); }

  torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op) override;
  torch::Tensor broadcast(torch::Tensor tensor, int root) override;
  torch::Tensor allgather(torch::Tensor tensor) override;
  torch::Tensor allgatherv(torch::Tensor tensor) override;
  torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op) override;
  void barrier() override;
  void finalize_check() override;
  std::unique_ptr<Backend> split(int color, int key) override;
  /// Point-to-point: mpi_p2p.h, on a communicator of its own.
  std::shared_ptr<P2pWork> send(const Transfer& transfer) override { return p2p_->send(transfer); }
  std::shared_ptr<P2pWork> recv(const Transfer& transfer) override { return p2p_->recv(transfer); }

  // ---- for a backend that moves its payloads itself (NCCL) over this one ----

  /// GPU tensors' point-to-point data goes over `payload` (mpi_p2p.h).
  void set_device_payload(std::shared_ptr<DevicePayload> payload) {
    p2p_->set_device_payload(std::move(payload));
  }

  /// The consistency check alone, as every collective here runs it before
  /// its payload: returns every rank's descriptor where the full handshake
  /// ran (always for allgatherv, whose counts it carries), else an empty
  /// table. Throws MismatchError or TimeoutError as the collectives do.
  /// `payload`: Descriptor::payload (the NCCL backend's GPU tensors: 1).
  std::vector<Descriptor> check(Collective kind, const torch::Tensor* tensor,
                                std::optional<ReduceOp> op, int root,
                                const std::optional<std::string>& local_error, int payload = 0);
  /// The sequence number of the last collective checked.
  std::int64_t last_seq() const { return seq_ - 1; }
  double timeout_seconds() const { return timeout_seconds_; }
  /// After the payload of collective #`seq` did not complete in time, from
  /// a thread that may use the control communicator: which ranks stopped
  /// answering, in words ("rank 3 (on host n07) stopped answering ..."),
  /// or that all still answer, so `transport` ("MPI", "NCCL") is stuck.
  /// The backend is broken afterwards.
  std::string who_stopped(std::int64_t seq, const char* transport);

 private:
  std::string where_are(const std::vector<int>& missing) const;
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
                  Handshake::Piggyback* small = nullptr, int payload = 0);
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
  /// What the exchange of power-of-two groups needs of this backend, for
  /// the collective now running.
  ExchangeContext exchange_context();

  MPI_Comm data_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  MPI_Comm fast_ = MPI_COMM_NULL;  ///< the fingerprint exchange's (handshake.h)
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  double timeout_seconds_;
  bool threads_multiple_;
  const StackService* stacks_;
  std::int64_t seq_ = 0;
  MpiTypes types_;
  Handshake handshake_;
  ResponseCache cache_;
  std::vector<char> staging_;  ///< a small allreduce's elements on the way
  HostStaging device_staging_;  ///< GPU tensors' pinned host copies
  std::vector<char> incoming_;  ///< ExchangeContext::incoming
  std::vector<char> reduced_;  ///< ExchangeContext::reduced
  std::unique_ptr<MpiP2p> p2p_;  ///< point-to-point transfers
  PayloadWatchdog watchdog_;  // last: its thread stops before the rest goes
};

}  // namespace tnt::comm
