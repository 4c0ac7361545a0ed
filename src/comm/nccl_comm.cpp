#include "comm/nccl_comm.h"

#include <cstring>

#include <c10/cuda/CUDAGuard.h>
#include <torch/types.h>

#include <tarantella/base/error.h>

#include "comm/mpi_backend.h"

namespace tnt::comm {
namespace {

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

void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm) {
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
  // NCCL binds the communicator to the device current at this call.
  const c10::cuda::CUDAGuard guard(device);
  check_nccl(ncclCommInitRank(&comm_, host.size(), id, host.rank()), "ncclCommInitRank");
}

NcclComm::~NcclComm() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
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
