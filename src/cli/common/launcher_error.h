// The one exception type of the launcher.
//
// Every problem the launcher detects before or around starting mpirun is a
// LauncherError: main() prints "tarantella: error: <message>" and exits with
// exit_code(). Messages name the bad value and the fix.
#pragma once

#include <stdexcept>
#include <string>

namespace tnt::cli {

/// Exit code for errors found before anything was started (bad flag, bad
/// hostfile, program not found, missing numactl or mpirun).
inline constexpr int kUsageExitCode = 2;

/// Example: `throw LauncherError("-n 0: the number of ranks must be at least 1");`
class LauncherError : public std::runtime_error {
 public:
  explicit LauncherError(const std::string& message, int exit_code = kUsageExitCode)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace tnt::cli
