// The NCCL backend is built (src/comm/nccl/nccl.cmake; see nccl_factory.h).
#include "comm/nccl/nccl_factory.h"

#include <tarantella/base/error.h>

#include "comm/nccl/nccl_backend.h"

namespace tnt::comm {

bool nccl_built() { return true; }

std::unique_ptr<Backend> make_nccl_backend(std::unique_ptr<Backend> host, int device) {
  auto* mpi = dynamic_cast<MpiBackend*>(host.get());
  TNT_CHECK(mpi != nullptr, "the NCCL backend is layered on an MPI backend, got a '",
            host ? host->name() : std::string("null"), "' backend");
  host.release();
  return std::make_unique<NcclBackend>(std::unique_ptr<MpiBackend>(mpi),
                                       static_cast<c10::DeviceIndex>(device));
}

}  // namespace tnt::comm
