// fork + exec with the error reporting that plain fork/exec lacks.
//
// The launcher starts mpirun, the per-rank wrapper starts the user program,
// and node probing runs nvidia-smi; all three go through spawn() so that an
// exec failure (program missing on that host) comes back to the parent as an
// errno over a close-on-exec pipe instead of a confusing exit code.
#pragma once

#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tnt::cli {

/// Where the child's standard output or standard error goes.
enum class OutputMode { kInherit, kDevNull, kPipe };

/// Example: `SpawnOptions{{"mpirun", "-np", "2", ...}}` with environment set.
struct SpawnOptions {
  std::vector<std::string> argv;  ///< argv[0] is looked up in PATH like execvp
  /// Full environment ("NAME=VALUE" entries); nullopt keeps ours.
  std::optional<std::vector<std::string>> environment;
  OutputMode stdout_mode = OutputMode::kInherit;
  OutputMode stderr_mode = OutputMode::kInherit;
  /// Gives the child /dev/null as standard input instead of ours (a probe
  /// through ssh must not eat what the user types for rank 0).
  bool stdin_from_dev_null = false;
  /// PR_SET_PDEATHSIG: the signal the child gets when the spawning thread
  /// ends (its process dies, even by SIGKILL); 0: none.
  int parent_death_signal = 0;
};

/// A started child. stdout_fd / stderr_fd are the read ends of the pipes
/// when stdout_mode / stderr_mode is kPipe, else -1.
struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

/// exec failed in the child; error_number is its errno.
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& program, int error_number);
  int error_number() const noexcept { return error_number_; }

 private:
  int error_number_;
};

/// Forks and execs. Signal dispositions and the signal mask are reset to the
/// defaults in the child. Throws SpawnError when exec fails (the child has
/// been reaped then), std::system_error when fork or pipe fails.
Child spawn(const SpawnOptions& options);

/// Runs argv to completion and returns its standard output (stderr discarded).
std::string capture_stdout(const std::vector<std::string>& argv);

/// waitpid() that retries on EINTR; returns the wait status.
int wait_for(pid_t pid);

}  // namespace tnt::cli
