// MPI start-up and shutdown (see mpi_session.h).
#include "comm/mpi/mpi_session.h"

#include <mpi.h>

#include <cstdlib>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <tarantella/base/error.h>

#include "comm/mpi/mpi_backend.h"
#include "comm/mpi_check.h"
#include "comm/check/stack_service.h"

namespace tnt::comm {
namespace {

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}

// Starts MPI unless the program already did; returns whether we own it and
// the thread level in force.
std::pair<bool, int> start_mpi(int argc, char** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&provided);
  } else {
    // OpenMPI's mpi_yield_when_idle is left as OpenMPI (or the user) sets
    // it: a rank no longer waits for its peers inside a blocking MPI call
    // but in the fingerprint exchange before it, with a back-off of our own
    // (poll.h), so the payload's spin lasts only as long as the transfer.
    // Setting it job-wide slowed every small collective 2-3x.
    // Between hosts (the TCP transport), messages above the eager limit
    // (64 KiB by default) wait for the receiver's go-ahead, and that small
    // reply queues behind the receiver's own outgoing data on the same
    // socket: the two directions of a ring allreduce take turns, and an
    // 80 MB allreduce ran at half the link (1.25 s instead of 0.67 s at
    // 1 Gbit/s, 90 ms instead of 71 ms at 10 Gbit/s; bench/scaling). Our
    // collectives move at most 4 MiB (kMaxChunk float32) per call, so an
    // eager limit just above that (64 KiB of room for OpenMPI's headers)
    // sends every piece without the handshake.
    const std::string eager_limit = std::to_string(kMaxChunk * sizeof(float) + 65536);
    setenv("OMPI_MCA_btl_tcp_eager_limit", eager_limit.c_str(), /*overwrite=*/0);
    setenv("OMPI_MCA_btl_tcp_max_send_size", eager_limit.c_str(), /*overwrite=*/0);
    check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided),
                    "MPI_Init_thread");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    if (!initialized) MPI_Finalize();
    throw Error(fmt::format(
        "[tarantella] the MPI library provides only {}, but Tarantella's communication thread "
        "needs MPI_THREAD_SERIALIZED or higher: {}",
        thread_level_name(provided),
        initialized ? "initialize MPI with MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...) or "
                      "let tnt::Runtime initialize it"
                    : "use an MPI build with thread support (Debian's OpenMPI has it)"));
  }
  return {!initialized, provided};
}

}  // namespace

MpiSession::MpiSession(int argc, char** argv, bool stack_service) {
  const auto [owns, provided] = start_mpi(argc, argv);
  owns_mpi_ = owns;
  threads_multiple_ = provided >= MPI_THREAD_MULTIPLE;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Its thread calls MPI beside the engines: only at MPI_THREAD_MULTIPLE.
  if (stack_service && threads_multiple_ && size > 1) {
    stacks_ = std::make_unique<StackService>(MPI_COMM_WORLD);
  }
}

MpiSession::~MpiSession() {
  stacks_.reset();
  if (owns_mpi_) MPI_Finalize();
}

std::unique_ptr<Backend> MpiSession::world(double timeout_seconds) const {
  return std::make_unique<MpiBackend>(MPI_COMM_WORLD, timeout_seconds, threads_multiple_,
                                      stacks_.get());
}

void MpiSession::abort_job(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace tnt::comm
