#include "comm/nccl/nccl_comm.h"

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/types.h>

#include <tarantella/base/error.h>

#include "comm/mpi/mpi_backend.h"
#include "comm/poll.h"

namespace tnt::comm {
namespace {

// How long a call's host-side work may go on (non-blocking mode) before it
// counts as failed; collectives have their own deadline on the device work.
constexpr double kSettleSeconds = 300.0;

// Byte 0: whether rank 0 has an id; then the id itself. One broadcast, so
// that a failure on rank 0 reaches every rank as an error, not a hang.
torch::Tensor shared_unique_id(MpiBackend& host, std::string& root_error) {
  torch::Tensor buffer = torch::zeros({1 + NCCL_UNIQUE_ID_BYTES}, torch::kUInt8);
  if (host.rank() == 0) {
    ncclUniqueId id;
    const ncclResult_t rc = ncclGetUniqueId(&id);
    if (rc == ncclSuccess) {
      buffer.data_ptr<std::uint8_t>()[0] = 1;
      std::memcpy(buffer.data_ptr<std::uint8_t>() + 1, id.internal, NCCL_UNIQUE_ID_BYTES);
    } else {
      root_error = ::tnt::detail::concat("ncclGetUniqueId failed: ", ncclGetErrorString(rc));
    }
  }
  host.broadcast(buffer, 0);
  return buffer;
}

}  // namespace

ncclResult_t settle(ncclComm_t comm, PollClock::time_point deadline) {
  ncclResult_t state = ncclInProgress;
  poll_until(
      [&] {
        const ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
        if (rc != ncclSuccess) state = rc;
        return state != ncclInProgress;
      },
      deadline, std::chrono::microseconds(50), std::chrono::microseconds(1000),
      PollClock::time_point::max(), [] {});
  return state;
}

namespace {
thread_local double t_settle_seconds = kSettleSeconds;  // SettleLimit's
}  // namespace

SettleLimit::SettleLimit(double seconds) : previous_(t_settle_seconds) {
  t_settle_seconds = seconds;
}
SettleLimit::~SettleLimit() { t_settle_seconds = previous_; }

void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm) {
  // Non-blocking communicator: the call's host-side work may go on after it
  // returns; the next call must wait for it. A stuck peer is caught by the
  // collective's own deadline (NcclBackend::await_done) once the call is
  // queued; before that (a communicator connecting on first use) by this
  // wait, under the thread's SettleLimit.
  if (rc == ncclInProgress && comm != nullptr) {
    const double seconds = t_settle_seconds;
    rc = settle(comm, deadline_after(seconds));
    if (rc == ncclInProgress) {
      ::tnt::detail::throw_error(::tnt::detail::concat(
          call, " did not get going within ", seconds, " s (TNT_COMM_TIMEOUT): a rank of the "
          "group stopped taking part before it (it died, or stopped calling collectives); "
          "NCCL_DEBUG=WARN says more"));
    }
  }
  if (rc == ncclSuccess) return;
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  ::tnt::detail::throw_error(::tnt::detail::concat(
      call, " failed: ", ncclGetErrorString(rc),
      last != nullptr && *last != '\0' ? ::tnt::detail::concat(" (", last, ")") : std::string(),
      "; NCCL_DEBUG=WARN says more"));
}

NcclComm::NcclComm(MpiBackend& host, c10::DeviceIndex device) {
  std::string root_error;
  const torch::Tensor buffer = shared_unique_id(host, root_error);
  if (!root_error.empty()) ::tnt::detail::throw_error(root_error);
  TNT_CHECK(buffer.data_ptr<std::uint8_t>()[0] == 1,
            "rank 0 of this group could not make the NCCL communicator's id (see its error): "
            "check its network interfaces (NCCL_SOCKET_IFNAME) or use TNT_COMM_BACKEND=mpi");
  ncclUniqueId id;
  std::memcpy(id.internal, buffer.data_ptr<std::uint8_t>() + 1, NCCL_UNIQUE_ID_BYTES);
  // NCCL binds the communicator to the device current at this call. The
  // communicator is non-blocking, so that joining has a deadline: a rank
  // that died after the id's broadcast would otherwise hang every other
  // rank inside ncclCommInitRank for ever.
  const c10::cuda::CUDAGuard guard(device);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t rc = ncclCommInitRankConfig(&comm_, host.size(), id, host.rank(), &config);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    abort();
    check_nccl(rc, "ncclCommInitRankConfig");
  }
  const double timeout = host.timeout_seconds();
  const ncclResult_t joined = settle(comm_, deadline_after(timeout));
  if (joined == ncclSuccess) return;
  abort();
  if (joined != ncclInProgress) check_nccl(joined, "ncclCommInitRankConfig");
  // Every rank passed the id's broadcast: one that has not joined since
  // stopped on the way. The host's control channel says which.
  ::tnt::detail::throw_error(::tnt::detail::concat(
      "[tarantella rank ", host.rank(), "] the NCCL communicator of ", host.size(),
      " ranks was not complete within ", timeout, " s (TNT_COMM_TIMEOUT): ",
      host.who_stopped(host.last_seq(), "NCCL"), "; the communicator was aborted"));
}

void end_comm(ncclComm_t comm, bool idle) noexcept {
  ncclResult_t state = ncclInProgress;
  if (idle && ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess) {
    // Non-blocking mode: finalizing may go on after the call; wait (bounded).
    state = ncclCommFinalize(comm);
    if (state == ncclInProgress) state = settle(comm, deadline_after(kSettleSeconds));
    if (state == ncclSuccess) {
      ncclCommDestroy(comm);
      return;
    }
  }
  ncclCommAbort(comm);
}

namespace {
// Streams are never destroyed: the caching allocator keeps the streams a
// block was used on (recordStream) and records events on them when the
// tensor is freed, which may be long after its group is gone (received
// activations, results). A stream given back is handed to the next
// OwnStream of its device; leaked at exit.
struct StreamShelf {
  std::mutex mutex;
  std::map<c10::DeviceIndex, std::vector<cudaStream_t>> free;
};
StreamShelf& shelf() {
  static auto* s = new StreamShelf();
  return *s;
}

cudaStream_t take_stream(c10::DeviceIndex device) {
  {
    StreamShelf& s = shelf();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto& free = s.free[device];
    if (!free.empty()) {
      cudaStream_t stream = free.back();
      free.pop_back();
      return stream;
    }
  }
  const c10::cuda::CUDAGuard guard(device);
  int least = 0, greatest = 0;
  C10_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream = nullptr;
  C10_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  return stream;
}
}  // namespace

OwnStream::OwnStream(c10::DeviceIndex device)
    : stream_(c10::cuda::getStreamFromExternal(take_stream(device), device)) {}

OwnStream::~OwnStream() {
  try {
    StreamShelf& s = shelf();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.free[stream_.device_index()].push_back(stream_.stream());
  } catch (...) {
    // Out of memory for the shelf: the stream stays alive, unused.
  }
}

NcclComm::~NcclComm() {
  if (comm_ != nullptr) end_comm(comm_, /*idle=*/true);
}

ncclResult_t NcclComm::async_error() const {
  if (comm_ == nullptr) return ncclSuccess;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(comm_, &state);
  return rc == ncclSuccess ? state : rc;
}

void NcclComm::abort() noexcept {
  if (comm_ == nullptr) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

}  // namespace tnt::comm
