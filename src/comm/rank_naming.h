// Private: a group's way of naming its ranks, for a backend that reports an
// error without throwing it.
//
// ProcessGroup retells every error that leaves a group in the job's rank
// numbers, with the roles its owner gave (name_ranks: "stage 1 of 2,
// pipeline 1"; comm/process_group.cpp). The MPI backend's payload watchdog
// cannot throw: the engine thread is blocked inside MPI, so the watchdog
// prints its verdict and ends the process (comm/mpi/mpi_backend.cpp). It
// asks here how the group that owns the backend would tell it.
#pragma once

#include <functional>
#include <string>

namespace tnt::comm {

class Backend;

/// Text in, the same text told in the job's ranks out.
using Retelling = std::function<std::string(const std::string&)>;

/// `backend`'s group tells its errors with `retell`; null: no longer.
void set_retelling(const Backend* backend, Retelling retell);

/// `text` as the group that owns `backend` tells it (unchanged without one).
std::string retold_by_group(const Backend* backend, const std::string& text);

}  // namespace tnt::comm
