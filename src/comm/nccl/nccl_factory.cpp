// The NCCL backend is built (src/comm/nccl/nccl.cmake; see nccl_factory.h).
#include "comm/nccl/nccl_factory.h"

#include <cctype>

#include <cuda_runtime_api.h>

#include <tarantella/base/error.h>

#include "comm/nccl/nccl_backend.h"
#include "comm/nccl/nccl_comm.h"

namespace tnt::comm {

bool nccl_built() { return true; }

std::string gpu_bus_id(int device) {
  char id[32] = {};
  const cudaError_t status = cudaDeviceGetPCIBusId(id, sizeof(id), device);
  TNT_CHECK(status == cudaSuccess, "CUDA cannot name the PCI bus of GPU ", device,
            " of this process (cudaDeviceGetPCIBusId: ", cudaGetErrorString(status),
            "): check the driver with nvidia-smi, or train on the CPU with TNT_USE_GPU=false");
  std::string out(id);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int nccl_version() {
  int version = 0;
  check_nccl(ncclGetVersion(&version), "ncclGetVersion");
  return version;
}

std::unique_ptr<Backend> make_nccl_backend(std::unique_ptr<Backend> host, int device) {
  // The library loaded may be older than the headers built against
  // (nccl.cmake checks those): the same limit, where it counts (the vote
  // falls back to MPI before, backend_choice.cpp; this guards other callers).
  const int version = nccl_version();
  TNT_CHECK(version >= kMinNcclVersion, "the NCCL loaded is version ", version / 10000, ".",
            version / 100 % 100, "; tarantella's NCCL backend needs 2.27 or later (several "
            "non-blocking communicators in progress on one thread): install a newer NCCL "
            "(a current pip torch brings one in its nvidia-nccl wheel), or use "
            "TNT_COMM_BACKEND=mpi");
  auto* mpi = dynamic_cast<MpiBackend*>(host.get());
  TNT_CHECK(mpi != nullptr, "the NCCL backend is layered on an MPI backend, got a '",
            host ? host->name() : std::string("null"), "' backend");
  host.release();
  return std::make_unique<NcclBackend>(std::unique_ptr<MpiBackend>(mpi),
                                       static_cast<c10::DeviceIndex>(device));
}

}  // namespace tnt::comm
