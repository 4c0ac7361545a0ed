// Private: MPI's lifetime in one RAII object, so that comm/ owns every MPI
// call (the runtime above it holds a session and the world group it makes).
// Starts MPI unless the program already did, at MPI_THREAD_MULTIPLE where the
// library has it (each process set runs its own engine thread), and at least
// MPI_THREAD_SERIALIZED (all of one group's MPI calls come from its engine).
#pragma once

#include <memory>
#include <string>

#include <tarantella/comm/backend.h>

namespace tnt::comm {

class MpiSession {
 public:
  MpiSession(int argc, char** argv);
  /// Finalizes MPI if this session started it.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /// The backend of MPI_COMM_WORLD (duplicated), for the world group.
  std::unique_ptr<Backend> world(double timeout_seconds) const;
  /// Whether groups may run engines side by side (MPI_THREAD_MULTIPLE).
  bool threads_multiple() const { return threads_multiple_; }
  /// Ends every process of the job (MPI_Abort on the world), never returns.
  [[noreturn]] static void abort_job(int code);

 private:
  bool owns_mpi_ = false;
  bool threads_multiple_ = false;
};

}  // namespace tnt::comm
