// Wait status helpers; see exit_status.h.
#include "common/exit_status.h"

#include <sys/wait.h>

#include <cstring>

namespace tnt::cli {

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;  // stopped/continued are not final states; callers only pass final ones
}

std::string describe_signal(int signal_number) {
  const char* name = ::strsignal(signal_number);
  return "signal " + std::to_string(signal_number) + " (" + (name ? name : "unknown") + ")";
}

std::string describe_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    std::string text = "was killed by " + describe_signal(WTERMSIG(wait_status));
    if (WCOREDUMP(wait_status)) text += ", core dumped";
    return text;
  }
  return "ended with wait status " + std::to_string(wait_status);
}

}  // namespace tnt::cli
