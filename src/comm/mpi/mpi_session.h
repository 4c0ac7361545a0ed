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

class StackService;

class MpiSession {
 public:
  /// Call on the thread that runs the program's own code (its stack is the
  /// one a timed-out collective reports). `stack_service`: false runs no
  /// stack service (TNT_STACK_SERVICE=0).
  MpiSession(int argc, char** argv, bool stack_service = true);
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
  /// Where a rank is, for the report of a collective it did not reach
  /// (stack_service.h): with MPI_THREAD_MULTIPLE and more than one rank.
  std::unique_ptr<StackService> stacks_;
};

}  // namespace tnt::comm
