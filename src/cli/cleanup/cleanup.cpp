// Per-host cleanup; see cleanup.h and process_table.h for the matching rule.
#include "cleanup/cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cleanup/process_table.h"
#include "common/launcher_error.h"
#include "common/program_path.h"
#include "probe/node_facts.h"

namespace tnt::cli {
namespace {

const char* const kSignalTerm = "--signal=TERM";
const char* const kSignalKill = "--signal=KILL";

std::string host_name() {
  char buffer[256] = {};
  ::gethostname(buffer, sizeof(buffer) - 1);
  return buffer;
}

// The program as this host sees it: remote hosts may keep it elsewhere in
// PATH, and symlinks (python3 -> python3.11) must compare equal to exe.
std::string program_on_this_host(const std::string& program) {
  const std::string located =
      program.find('/') == std::string::npos ? find_in_path(program) : program;
  return located.empty() ? "" : real_path(located);
}

std::string pid_list(const std::vector<pid_t>& pids) {
  std::string text;
  for (pid_t pid : pids) text += (text.empty() ? "" : " ") + std::to_string(pid);
  return text;
}

}  // namespace

std::vector<std::string> cleanup_exec_arguments(bool force, const std::string& program) {
  return {kCleanupExecFlag, force ? kSignalKill : kSignalTerm, "--", program};
}

CleanupRequest parse_cleanup_exec(const std::vector<std::string>& args) {
  if (args.size() != 4 || args[0] != kCleanupExecFlag || args[2] != "--" ||
      (args[1] != kSignalTerm && args[1] != kSignalKill)) {
    throw LauncherError(
        "internal: malformed --cleanup-exec arguments: the launcher and the "
        "tarantella on this host differ in version?");
  }
  CleanupRequest request;
  request.force = args[1] == kSignalKill;
  request.program = args[3];
  return request;
}

int clean_up_this_host(const CleanupRequest& request) {
  const std::string prefix = "tarantella: cleanup on host " + host_name() + ": ";
  const std::string program = program_on_this_host(request.program);
  if (program.empty()) {
    std::cout << prefix << "signalled 0 processes (" << request.program
              << " does not exist on this host)" << std::endl;
    return 0;
  }
  const auto processes = scan_processes("/proc");
  const auto targets = select_cleanup_targets(processes, program, ::getuid(),
                                              self_and_ancestors(processes, ::getpid()));
  const int signal_number = request.force ? SIGKILL : SIGTERM;
  const char* signal_name = request.force ? "SIGKILL" : "SIGTERM";
  if (request.dry_run) {
    std::cout << prefix << "would signal " << targets.size() << " process(es) of " << program
              << " with " << signal_name << " (pids " << pid_list(targets) << ")" << std::endl;
    return 0;
  }
  std::vector<pid_t> signalled;
  int failures = 0;
  for (pid_t pid : targets) {
    if (::kill(pid, signal_number) == 0) {
      signalled.push_back(pid);
    } else if (errno != ESRCH) {  // ESRCH: it exited on its own meanwhile
      ++failures;
      std::cerr << prefix << "cannot signal pid " << pid << ": " << std::strerror(errno) << "\n";
    }
  }
  std::cout << prefix << "signalled " << signalled.size() << " process(es) of " << program
            << " with " << signal_name << (signalled.empty() ? "" : " (pids ")
            << pid_list(signalled) << (signalled.empty() ? "" : ")") << std::endl;
  return failures == 0 ? 0 : 1;
}

}  // namespace tnt::cli
