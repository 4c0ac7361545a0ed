#include "comm/nccl/nccl_backend.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "comm/descriptor.h"
#include "comm/transfer.h"
#include "comm/poll.h"
#include "comm/ready_mark.h"

namespace tnt::comm {
namespace {

ncclDataType_t to_nccl(NcclType type) {
  switch (type) {
    case NcclType::Float32: return ncclFloat32;
    case NcclType::Float64: return ncclFloat64;
    case NcclType::Float16: return ncclFloat16;
    case NcclType::BFloat16: return ncclBfloat16;
    case NcclType::Int32: return ncclInt32;
    case NcclType::Int64: return ncclInt64;
    case NcclType::Uint8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t to_nccl(NcclOp op) {
  switch (op) {
    case NcclOp::Sum: return ncclSum;
    case NcclOp::Prod: return ncclProd;
    case NcclOp::Min: return ncclMin;
    case NcclOp::Max: return ncclMax;
  }
  return ncclSum;
}

char* bytes(const torch::Tensor& t) { return static_cast<char*>(t.data_ptr()); }

// Where each rank's block starts, in elements (counts: elements per rank).
std::vector<std::int64_t> offsets(const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> out(counts.size() + 1, 0);
  for (std::size_t r = 0; r < counts.size(); ++r) out[r + 1] = out[r] + counts[r];
  return out;
}

bool all_equal(const std::vector<std::int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

// Descriptor::payload of a GPU tensor here: a rank that passes a host
// tensor instead (the MPI path) is named by the handshake, not left waiting.
constexpr int kGpuPayload = 1;

// Tensors in host memory take the host backend's path (see the header).
bool on_host(const torch::Tensor& t) { return t.defined() && t.device().is_cpu(); }

void all_gather(const torch::Tensor& in, ncclDataType_t type, ncclComm_t comm,
                cudaStream_t stream, torch::Tensor& out) {
  check_nccl(ncclAllGather(in.data_ptr(), out.data_ptr(), static_cast<std::size_t>(in.numel()),
                           type, comm, stream),
             "ncclAllGather", comm);
}

// One call per rank with a non-empty block (`call(rank, first element,
// count)`), grouped so that NCCL schedules them together: NCCL has no
// allgatherv, and its reduce_scatter needs blocks of equal size, while the
// micro-batch rule gives the first D mod N ranks one row more.
template <typename PerRank>
void per_rank_grouped(const std::vector<std::int64_t>& counts, ncclComm_t comm, PerRank call) {
  const std::vector<std::int64_t> start = offsets(counts);
  check_nccl(ncclGroupStart(), "ncclGroupStart", comm);
  try {
    for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
      if (counts[r] > 0) call(r, start[r], static_cast<std::size_t>(counts[r]));
    }
  } catch (...) {
    ncclGroupEnd();  // the group is per thread: never leave it open
    throw;
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd", comm);
}

constexpr const char* kBrokenText =
    "the NCCL communicator was aborted after an earlier collective failed; the job must be "
    "restarted";

}  // namespace

NcclBackend::NcclBackend(std::unique_ptr<MpiBackend> host, c10::DeviceIndex device)
    : host_(std::move(host)),
      device_(device),
      own_stream_(device),
      comm_(*host_, device),
      stream_(own_stream_.get()),
      p2p_(std::make_shared<NcclP2p>(device)) {
  host_->set_device_payload(p2p_);
}

NcclBackend::~NcclBackend() {
  // After a failure peers may never join a clean shutdown: abort instead.
  // (NCCL sets the communicator's device itself; no CUDA call here may
  // throw, even when a group handle outlives the runtime.)
  if (broken()) comm_.abort();
}

std::optional<std::string> NcclBackend::problem(const torch::Tensor& tensor,
                                                std::optional<ReduceOp> op,
                                                const char* needs_rows) const {
  // Said in the handshake, so that every rank fails there: a peer told only
  // after it agreed would wait in NCCL for this rank until its timeout.
  if (broken_) return std::string(kBrokenText);
  if (auto error = validate(tensor, op)) return error;
  if (needs_rows != nullptr && tensor.dim() == 0) {
    return ::tnt::detail::concat(needs_rows, " needs a tensor with at least one dimension: use "
                                 "tensor.reshape({1})");
  }
  const torch::Device mine(torch::kCUDA, device_);
  if (tensor.device() == mine) return std::nullopt;
  return ::tnt::detail::concat(
      "rank ", rank(), ": the tensor is on ", tensor.device(), ", but this group's NCCL "
      "communicator is on ", mine, " (one GPU per rank, chosen by the local rank): move it with "
      ".to(torch::Device(torch::kCUDA, ", static_cast<int>(device_), ")), or use "
      "TNT_COMM_BACKEND=mpi");
}

template <typename Enqueue>
void NcclBackend::run_on_stream(const char* what, std::int64_t elements, Enqueue enqueue) {
  TNT_CHECK(!broken_, kBrokenText);
  const c10::cuda::CUDAGuard guard(device_);  // this thread may be the caller's, or the engine's
  try {
    const c10::cuda::CUDAStream caller(consumer());
    if (const ReadyMark* mark = current_ready_mark()) {
      // Enqueued asynchronously (a gradient bucket): wait for the moment its
      // tensor was ready on the stream that produced it, not for everything
      // queued since (comm/ready_mark.h).
      mark->event.block(stream_.unwrap());
    } else {
      ready_.record(caller);  // after the kernels that produced the tensor
      ready_.block(stream_);
    }
    {
      const SettleLimit limit(host_->timeout_seconds());
      enqueue(stream_.stream());
    }
    done_.record(stream_);
    await_done(what, elements);
    done_.block(caller);  // the consumer's stream orders after the payload
  } catch (const Error&) {
    // Peers may have enqueued their part: they must not wait for ours.
    if (!broken_) comm_.abort();
    broken_ = true;
    throw;
  } catch (const std::exception& e) {
    // A CUDA error on the way (an event's record or query after a kernel
    // faulted): the same, told as the job's failure.
    if (!broken_) comm_.abort();
    broken_ = true;
    throw Error(::tnt::detail::concat("[tarantella rank ", rank(), "] ", what, " of ", elements,
                                      " elements failed on the GPU: ", e.what(),
                                      "; the NCCL communicator was aborted and the job must be "
                                      "restarted"));
  }
}

c10::Stream NcclBackend::consumer() const {
  return consumer_stream(torch::Device(torch::kCUDA, device_));
}

torch::Tensor NcclBackend::result_like(const torch::Tensor& tensor, at::IntArrayRef shape) const {
  // Allocated on the NCCL stream, which writes it: a block taken on the
  // caller's stream now (on the engine thread, after the request's ready
  // mark) may have been freed there after the mark, with kernels queued since
  // still using it, and the NCCL stream waits only for the mark. Recorded for
  // the consumer's stream, which reads it, so the block is not reused before
  // that stream is done with it.
  const c10::StreamGuard on(stream_.unwrap());
  torch::Tensor out = torch::empty(shape, tensor.options());
  if (out.numel() > 0) {
    c10::cuda::CUDACachingAllocator::recordStream(out.storage().data_ptr(),
                                                  c10::cuda::CUDAStream(consumer()));
  }
  return out;
}

void NcclBackend::average(torch::Tensor& tensor) const {
  // On the NCCL stream, before the payload's done event: a finished handle
  // means the division is done too, for a consumer on any stream.
  const c10::StreamGuard on(stream_.unwrap());
  // Not an autograd operation (a leaf that requires grad may be averaged in
  // place, as on the MPI backend): an error here would break the group.
  const at::NoGradGuard no_grad;
  tensor.div_(size());
}

void NcclBackend::await_done(const char* what, std::int64_t elements) {
  const double timeout = host_->timeout_seconds();
  const std::int64_t seq = host_->last_seq();
  ncclResult_t async = ncclSuccess;
  const auto finished = [&] {
    if (done_.query()) return true;
    async = comm_.async_error();
    return async != ncclSuccess && async != ncclInProgress;
  };
  const auto warn = [&] {
    ::tnt::log::warning(::tnt::detail::concat(
        "collective #", seq, " (", what, " of ", elements, " elements, NCCL) has not completed "
        "after ", stall_warning_seconds(timeout), " s although every rank agreed to it; the job "
        "fails if it does not complete within ", timeout, " s (TNT_COMM_TIMEOUT)"));
  };
  // Device work takes micro- to milliseconds: yield briefly, then naps of
  // at most 50 us (poll.h), so the wait leaves the core to training.
  const bool ended = poll_until(finished, deadline_after(timeout), std::chrono::microseconds(20),
                                std::chrono::microseconds(50),
                                deadline_after(stall_warning_seconds(timeout)), warn);
  if (ended && (async == ncclSuccess || async == ncclInProgress)) return;
  fail(::tnt::detail::concat("collective #", seq, " (", what, " of ", elements, " elements)"),
       ended ? async : ncclSuccess);
}

void NcclBackend::fail(const std::string& what, ncclResult_t async) {
  // Abort first: the kernels stop waiting for peers and the GPU is free.
  comm_.abort();
  broken_ = true;
  const std::string prefix = ::tnt::detail::concat("[tarantella rank ", rank(), "] ");
  if (async != ncclSuccess) {
    throw Error(::tnt::detail::concat(
        prefix, what, " failed in NCCL: ", ncclGetErrorString(async),
        "; the NCCL communicator was aborted and the job must be restarted (NCCL_DEBUG=WARN "
        "says more)"));
  }
  // Every rank had agreed to this collective, so a rank stopped on the way;
  // the host's control channel is free (we are not blocked in NCCL).
  const std::string verdict = host_->who_stopped(host_->last_seq(), "NCCL");
  throw TimeoutError(::tnt::detail::concat(
      prefix, what, " did not complete within ", host_->timeout_seconds(),
      " s (TNT_COMM_TIMEOUT) although every rank had agreed to it: ", verdict,
      "; the NCCL communicator was aborted"));
}

torch::Tensor NcclBackend::allreduce(torch::Tensor tensor, ReduceOp op) {
  if (on_host(tensor)) return host_->allreduce(tensor, op);
  host_->check(Collective::Allreduce, &tensor, op, -1, problem(tensor, op), kGpuPayload);
  if (tensor.numel() == 0) return tensor;
  const NcclPlan plan = nccl_plan(dtype_of(tensor), op);
  run_on_stream("allreduce", tensor.numel(), [&](cudaStream_t stream) {
    check_nccl(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(),
                             static_cast<std::size_t>(tensor.numel()), to_nccl(plan.type),
                             to_nccl(plan.op), comm_.get(), stream),
               "ncclAllReduce", comm_.get());
    if (plan.divide_by_size && size() > 1) average(tensor);
  });
  return tensor;
}

torch::Tensor NcclBackend::broadcast(torch::Tensor tensor, int root) {
  if (on_host(tensor)) return host_->broadcast(tensor, root);
  std::optional<std::string> error = problem(tensor, std::nullopt);
  if (!error && (root < 0 || root >= size())) {
    error = ::tnt::detail::concat("broadcast root ", root, " is not a rank of this group (0..",
                                  size() - 1, "): pass a root in that range");
  }
  host_->check(Collective::Broadcast, &tensor, std::nullopt, root, error, kGpuPayload);
  if (tensor.numel() == 0) return tensor;
  const NcclPlan plan = nccl_plan(dtype_of(tensor), std::nullopt);
  run_on_stream("broadcast", tensor.numel(), [&](cudaStream_t stream) {
    check_nccl(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(),
                             static_cast<std::size_t>(tensor.numel()), to_nccl(plan.type), root,
                             comm_.get(), stream),
               "ncclBroadcast", comm_.get());
  });
  return tensor;
}

torch::Tensor NcclBackend::allgather(torch::Tensor tensor) {
  if (on_host(tensor)) return host_->allgather(tensor);
  const std::optional<std::string> error = problem(tensor, std::nullopt, "allgather");
  host_->check(Collective::Allgather, &tensor, std::nullopt, -1, error, kGpuPayload);
  std::vector<std::int64_t> shape = tensor.sizes().vec();
  shape[0] *= size();
  torch::Tensor out = result_like(tensor, shape);
  if (tensor.numel() == 0) return out;
  const NcclPlan plan = nccl_plan(dtype_of(tensor), std::nullopt);
  run_on_stream("allgather", tensor.numel(), [&](cudaStream_t stream) {
    all_gather(tensor, to_nccl(plan.type), comm_.get(), stream, out);
  });
  return out;
}

torch::Tensor NcclBackend::allgatherv(torch::Tensor tensor) {
  if (on_host(tensor)) return host_->allgatherv(tensor);
  const std::optional<std::string> error = problem(tensor, std::nullopt, "allgatherv");
  const std::vector<Descriptor> table =
      host_->check(Collective::Allgatherv, &tensor, std::nullopt, -1, error, kGpuPayload);
  std::vector<std::int64_t> counts;
  std::int64_t rows = 0;
  for (const Descriptor& d : table) {
    counts.push_back(d.numel);
    rows += d.sizes[0];
  }
  std::vector<std::int64_t> shape = tensor.sizes().vec();
  shape[0] = rows;
  torch::Tensor out = result_like(tensor, shape);
  if (out.numel() == 0) return out;
  const ncclDataType_t type = to_nccl(nccl_plan(dtype_of(tensor), std::nullopt).type);
  run_on_stream("allgatherv", out.numel(), [&](cudaStream_t stream) {
    if (all_equal(counts)) {
      all_gather(tensor, type, comm_.get(), stream, out);
    } else {
      // One broadcast from each rank into its place.
      const auto elem = static_cast<std::int64_t>(tensor.element_size());
      per_rank_grouped(counts, comm_.get(), [&](int r, std::int64_t first, std::size_t n) {
        char* place = bytes(out) + first * elem;
        check_nccl(ncclBroadcast(r == rank() ? tensor.data_ptr() : place, place, n, type, r,
                                 comm_.get(), stream),
                   "ncclBroadcast", comm_.get());
      });
    }
  });
  return out;
}

torch::Tensor NcclBackend::reduce_scatter(torch::Tensor tensor, ReduceOp op) {
  if (on_host(tensor)) return host_->reduce_scatter(tensor, op);
  const std::optional<std::string> error = problem(tensor, op, "reduce_scatter");
  host_->check(Collective::ReduceScatter, &tensor, op, -1, error, kGpuPayload);
  const std::int64_t row = tensor.size(0) == 0 ? 0 : tensor.numel() / tensor.size(0);
  const std::vector<std::int64_t> rows = split_rows(tensor.size(0), size());
  std::vector<std::int64_t> counts;
  for (const std::int64_t r : rows) counts.push_back(r * row);
  std::vector<std::int64_t> shape = tensor.sizes().vec();
  shape[0] = rows[static_cast<std::size_t>(rank())];
  torch::Tensor out = result_like(tensor, shape);
  if (tensor.numel() == 0) return out;
  const NcclPlan plan = nccl_plan(dtype_of(tensor), op);
  run_on_stream("reduce_scatter", tensor.numel(), [&](cudaStream_t stream) {
    if (all_equal(counts)) {
      check_nccl(ncclReduceScatter(tensor.data_ptr(), out.data_ptr(),
                                   static_cast<std::size_t>(counts[0]), to_nccl(plan.type),
                                   to_nccl(plan.op), comm_.get(), stream),
                 "ncclReduceScatter", comm_.get());
    } else {
      // One reduce to each rank; the receive buffer matters on the root only.
      const auto elem = static_cast<std::int64_t>(tensor.element_size());
      per_rank_grouped(counts, comm_.get(), [&](int r, std::int64_t first, std::size_t n) {
        char* block = bytes(tensor) + first * elem;
        check_nccl(ncclReduce(block, r == rank() ? out.data_ptr() : block, n, to_nccl(plan.type),
                              to_nccl(plan.op), r, comm_.get(), stream),
                   "ncclReduce", comm_.get());
      });
    }
    if (plan.divide_by_size && size() > 1) average(out);
  });
  return out;
}

void NcclBackend::check_device(const Transfer& t, bool receiving) const {
  if (!t.tensor.defined() || !t.tensor.is_cuda() || t.tensor.device().index() == device_) return;
  ::tnt::detail::throw_error(::tnt::detail::concat(
      transfer_text(t, receiving), ": the tensor is on ", t.tensor.device(),
      ", but this group's NCCL transfers are on ", torch::Device(torch::kCUDA, device_),
      " (one GPU per rank, chosen by the local rank): move it there, or use "
      "TNT_COMM_BACKEND=mpi"));
}

std::shared_ptr<P2pWork> NcclBackend::send(const Transfer& transfer) {
  check_device(transfer, false);
  return host_->send(transfer);
}

std::shared_ptr<P2pWork> NcclBackend::recv(const Transfer& transfer) {
  check_device(transfer, true);
  return host_->recv(transfer);
}

std::unique_ptr<Backend> NcclBackend::split(int color, int key) {
  std::unique_ptr<Backend> part = host_->split(color, key);
  if (part == nullptr) return nullptr;
  auto* mpi = dynamic_cast<MpiBackend*>(part.get());
  TNT_CHECK(mpi != nullptr, "NcclBackend::split: the host backend split into a '", part->name(),
            "' backend, where an MPI backend was expected");
  part.release();
  // Same GPU: this process keeps its device in every group it joins.
  return std::make_unique<NcclBackend>(std::unique_ptr<MpiBackend>(mpi), device_);
}

}  // namespace tnt::comm
