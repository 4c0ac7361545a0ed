// Private: the world group's backend, MPI or NCCL (backend_choice.h), made
// once by the runtime. Where this build has no NCCL and nothing asks for
// it, this is exactly MpiSession::world: the CPU path is unchanged.
#pragma once

#include <memory>

#include <tarantella/base/config.h>
#include <tarantella/comm/backend.h>

#include "comm/mpi/mpi_session.h"

namespace tnt::comm {

/// Collective over MPI_COMM_WORLD. Decides with choose_backend on each rank
/// (the model's device follows the engine's rule: TNT_USE_GPU and a CUDA
/// LibTorch that sees a GPU; this rank's GPU is its local rank), agrees
/// over MPI, and logs the choice at INFO. Throws tnt::Error on every rank
/// when a forced NCCL cannot work on some rank.
std::unique_ptr<Backend> make_world_backend(const MpiSession& session, const Config& config);

}  // namespace tnt::comm
