// Signals turned into readable events (the self-pipe trick).
//
// Both the launcher and the per-rank wrapper wait on a child and react to
// SIGINT/SIGTERM/SIGHUP/SIGCHLD. A signal handler may only do
// async-signal-safe work, so ours writes {signal, si_code, sender pid} to a
// non-blocking pipe and the main loop decides in ordinary code. si_code and
// si_pid are kept because the forwarding policy depends on who sent the
// signal (the terminal, mpirun, or a user's kill).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <initializer_list>
#include <vector>

namespace tnt::cli {

/// One delivered signal.
struct CaughtSignal {
  int number = 0;
  int code = 0;      ///< siginfo si_code: SI_KERNEL for terminal keys, SI_USER for kill()
  pid_t sender = 0;  ///< siginfo si_pid (0 for kernel-generated signals)
};

/// Installs SA_SIGINFO handlers for `signals` while alive and restores the
/// previous handlers on destruction. Only one instance may exist at a time.
/// Example: `SignalPipe signals({SIGINT, SIGTERM, SIGCHLD}); poll(signals.fd()...)`.
class SignalPipe {
 public:
  explicit SignalPipe(std::initializer_list<int> signals);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  /// Readable when a signal arrived; poll() it.
  int fd() const noexcept { return read_fd_; }
  /// Returns and removes every signal delivered so far, oldest first.
  std::vector<CaughtSignal> drain();

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
};

}  // namespace tnt::cli
