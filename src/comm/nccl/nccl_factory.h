// Private: the NCCL backend as seen by code that must build without NCCL.
// Exactly one of two files defines these (src/comm/nccl/nccl.cmake picks it):
// nccl_factory.cpp where the NCCL backend is built, nccl_absent.cpp where it
// is not. So no other file tests a macro for NCCL, and <nccl.h> stays
// inside the backend's own files.
#pragma once

#include <memory>
#include <string>

#include <tarantella/comm/backend.h>

namespace tnt::comm {

/// Whether this build has the NCCL backend.
bool nccl_built();

/// The PCI bus id of CUDA device `device` of this process, as NCCL tells
/// GPUs apart ("0000:3b:00.0"); "" where NCCL is not built. Throws
/// tnt::Error naming the device and CUDA's error where CUDA fails.
std::string gpu_bus_id(int device);

/// The NCCL library loaded, as ncclGetVersion says (22809 for 2.28.9); 0
/// without the NCCL backend.
int nccl_version();
/// The oldest the backend takes (2.27.0: several non-blocking communicators
/// in progress on one thread). The backend vote falls back to MPI below it
/// (comm/world/backend_choice.cpp).
constexpr int kMinNcclVersion = 22700;

/// Collective over `host`'s ranks (an MpiBackend, as MpiSession::world and
/// MpiBackend::split make): an NCCL backend layered on it, on CUDA device
/// `device` of this process. Throws tnt::Error where NCCL is not built.
std::unique_ptr<Backend> make_nccl_backend(std::unique_ptr<Backend> host, int device);

}  // namespace tnt::comm
