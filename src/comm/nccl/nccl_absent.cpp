// The NCCL backend is not built (a LibTorch without CUDA, or
// -DTNT_WITH_NCCL=OFF; see nccl_factory.h). choose_backend never picks it
// here, so make_nccl_backend is reached only by a mistake.
#include "comm/nccl/nccl_factory.h"

#include <tarantella/base/error.h>

namespace tnt::comm {

bool nccl_built() { return false; }

std::string gpu_bus_id(int) { return ""; }

int nccl_version() { return 0; }

std::unique_ptr<Backend> make_nccl_backend(std::unique_ptr<Backend>, int) {
  ::tnt::detail::throw_error(
      "this build of Tarantella has no NCCL backend: rebuild against a CUDA build of torch with "
      "-DTNT_WITH_NCCL=ON, or use TNT_COMM_BACKEND=mpi");
}

}  // namespace tnt::comm
