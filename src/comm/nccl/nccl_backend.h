// Private: the NCCL backend of a ProcessGroup, for models on CUDA with one
// GPU per rank (chosen by backend_choice.h).
//
// Note: how a collective runs. It is layered on the group's MpiBackend (the
// "host" backend), which keeps every guarantee of the comm layer:
//  1. the host's consistency check runs first (MpiBackend::check: the
//     handshake, its response cache and its arrival timeout), so a
//     mismatched or missing rank is named exactly as on the CPU;
//  2. the payload goes over NCCL on this backend's own CUDA stream, which
//     first waits on an event recorded on the calling thread's current
//     stream (so it runs after the kernels that produced the tensor, and
//     the rest of backward goes on meanwhile);
//  3. an event recorded on the NCCL stream after the payload is polled
//     (cudaEventQuery, and ncclCommGetAsyncError) until it completes or
//     TNT_COMM_TIMEOUT passes: the method returns only when the CUDA work is
//     done, so a finished Handle means finished device work, and a hung
//     collective is found. The caller's stream then waits on that event.
//  4. On a timeout or an asynchronous NCCL error the communicator is
//     aborted (ncclCommAbort), the backend is broken, and the error names
//     the rank that stopped answering (the host's probe), as on the CPU,
//     but as an exception: the engine thread was never blocked in NCCL.
// Tensors in host memory (the runtime's own small collectives: strings,
// split()'s colors, metric states) go over the host MpiBackend unchanged.
// Every collective of a group thus goes through one handshake and one
// sequence of collective numbers, whichever transport moves its payload.
// Point-to-point transfers go through the host's transfers too (headers,
// acks, checks, timeouts), with the data of GPU tensors over ncclSend and
// ncclRecv on channels of their own (nccl_p2p.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/types.h>

#include <tarantella/comm/backend.h>

#include "comm/mpi/mpi_backend.h"
#include "comm/nccl/nccl_comm.h"
#include "comm/nccl/nccl_p2p.h"
#include "comm/nccl/nccl_plan.h"

namespace tnt::comm {

class NcclBackend final : public Backend {
 public:
  /// Collective over `host`'s ranks. `device`: this rank's GPU (the
  /// engine's rule: the local rank, as every rank of the host has its own).
  NcclBackend(std::unique_ptr<MpiBackend> host, c10::DeviceIndex device);
  ~NcclBackend() override;
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  std::string name() const override { return "nccl"; }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  int local_rank() const override { return host_->local_rank(); }
  int local_size() const override { return host_->local_size(); }
  bool broken() const override { return broken_ || host_->broken(); }

  torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op) override;
  torch::Tensor broadcast(torch::Tensor tensor, int root) override;
  torch::Tensor allgather(torch::Tensor tensor) override;
  torch::Tensor allgatherv(torch::Tensor tensor) override;
  torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op) override;
  void barrier() override { host_->barrier(); }
  void finalize_check() override { host_->finalize_check(); }
  std::unique_ptr<Backend> split(int color, int key) override;
  std::shared_ptr<P2pWork> send(const Transfer& transfer) override;
  std::shared_ptr<P2pWork> recv(const Transfer& transfer) override;

 private:
  /// Throws when the tensor is on another GPU than this backend's.
  void check_device(const Transfer& transfer, bool receiving) const;
  /// Why this rank's `tensor` cannot go over NCCL (validate(), a scalar
  /// where collective `needs_rows` splits dimension 0, or a GPU other than
  /// this backend's), or nullopt.
  std::optional<std::string> problem(const torch::Tensor& tensor, std::optional<ReduceOp> op,
                                     const char* needs_rows = nullptr) const;
  /// Steps 2 and 3 of the note: `enqueue(stream)` issues the NCCL calls.
  template <typename Enqueue>
  void run_on_stream(const char* what, std::int64_t elements, Enqueue enqueue);
  /// The stream that uses a collective's result: the caller's, also where
  /// the engine thread runs the collective (comm/ready_mark.h).
  c10::Stream consumer() const;
  /// A result tensor, allocated on the consumer's stream (the caching
  /// allocator ties a block to the stream it was allocated on).
  torch::Tensor result_like(const torch::Tensor& tensor, at::IntArrayRef shape) const;
  /// Divides a reduced tensor by the group's size on the NCCL stream (inside
  /// run_on_stream's enqueue: before the done event).
  void average(torch::Tensor& tensor) const;
  /// Waits for `done_` as step 3 says; aborts and throws on failure.
  void await_done(const char* what, std::int64_t elements);
  [[noreturn]] void fail(const std::string& what, ncclResult_t async);

  std::unique_ptr<MpiBackend> host_;
  c10::DeviceIndex device_;
  OwnStream own_stream_;  ///< the NCCL stream, not one of torch's pool; outlives comm_
  NcclComm comm_;
  c10::cuda::CUDAStream stream_;  ///< own_stream_'s
  at::cuda::CUDAEvent ready_;  ///< recorded on the caller's stream
  at::cuda::CUDAEvent done_;   ///< recorded on stream_ after the payload
  bool broken_ = false;
  std::shared_ptr<NcclP2p> p2p_;  ///< GPU tensors' transfers; shared with the host's
};

}  // namespace tnt::comm
