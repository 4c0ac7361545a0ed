// Turning a wait status into words and into an exit code.
//
// The per-rank wrapper and the launcher both report how a child ended and
// exit with the same code a shell would show for it (128+N for signal N).
#pragma once

#include <string>

namespace tnt::cli {

/// The exit code a shell reports: the child's code, or 128 + signal number.
int exit_code_of(int wait_status);

/// "exited with code 3" or "was killed by signal 11 (Segmentation fault)".
std::string describe_wait_status(int wait_status);

/// "signal 15 (Terminated)".
std::string describe_signal(int signal_number);

}  // namespace tnt::cli
