// A SIGKILL backstop for mpirun that outlives the launcher.
//
// When the launcher is killed with SIGKILL (the OOM killer, a batch
// scheduler), none of its own code runs any more. mpirun is started with a
// parent-death signal (SIGTERM) so that it stops the ranks in its orderly
// way; this guard covers the case where it does not: a small helper process,
// forked by the launcher, waits for the launcher to go away and, if mpirun
// is still running `kill_delay` later, kills it with SIGKILL (the rank
// wrappers then stop their programs themselves).
//
// The helper holds a pidfd of mpirun, so it can neither miss mpirun's end
// nor signal an unrelated process that reused the pid. It notices the
// launcher's end as end-of-file on a pipe whose write end only the launcher
// holds. It runs only async-signal-safe code (the launcher's unit tests fork
// it from a process with threads), holds no other file descriptor (so it
// never keeps a pipe of the job open), ignores the stop signals a terminal
// or a process group kill would give it, and exits as soon as mpirun has.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace tnt::cli {

/// Example:
///   const Child mpirun = spawn(options);     // with parent_death_signal = SIGTERM
///   OrphanGuard guard(mpirun.pid, 5000ms);   // destroyed after mpirun was reaped
class OrphanGuard {
 public:
  /// Starts the helper for `watched`, a child of ours not yet reaped. Where
  /// the kernel has no pidfds (Linux < 5.3) there is no helper and the guard
  /// does nothing.
  OrphanGuard(pid_t watched, std::chrono::milliseconds kill_delay);
  /// Closes the lifeline and reaps the helper, which exits at once when
  /// mpirun has ended (else it gives mpirun `kill_delay`, as after our death).
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  /// Whether a helper is running (false without pidfd support).
  bool active() const noexcept { return helper_ > 0; }

 private:
  pid_t helper_ = -1;
  int lifeline_fd_ = -1;  ///< write end of the pipe the helper watches
};

}  // namespace tnt::cli
