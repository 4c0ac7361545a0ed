// fork/exec helper; see spawn.h.
//
// Between fork() and exec() the child may only call async-signal-safe
// functions, so every string array is built before fork().
#include "common/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace tnt::cli {
namespace {

std::vector<char*> to_c_array(const std::vector<std::string>& strings) {
  std::vector<char*> array;
  array.reserve(strings.size() + 1);
  for (const auto& s : strings) array.push_back(const_cast<char*>(s.c_str()));
  array.push_back(nullptr);
  return array;
}

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// The child ends of its stdin, stdout and stderr (-1: inherit ours).
struct ChildOutputs {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// Everything the child does before exec; async-signal-safe calls only.
[[noreturn]] void child_main(const SpawnOptions& options, char* const* argv, char* const* envp,
                             pid_t parent, ChildOutputs outputs, int error_fd) {
  if (options.parent_death_signal != 0) {
    ::prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (outputs.stdin_fd >= 0) ::dup2(outputs.stdin_fd, STDIN_FILENO);
  if (outputs.stdout_fd >= 0) ::dup2(outputs.stdout_fd, STDOUT_FILENO);
  if (outputs.stderr_fd >= 0) ::dup2(outputs.stderr_fd, STDERR_FILENO);
  if (envp != nullptr) {
    ::execvpe(argv[0], argv, envp);
  } else {
    ::execvp(argv[0], argv);
  }
  const int error_number = errno;
  ssize_t ignored = ::write(error_fd, &error_number, sizeof(error_number));
  (void)ignored;
  ::_exit(127);
}

// Opens what the child's stdout or stderr should become; returns
// {child_fd, parent_read_fd}, -1 where there is none.
std::pair<int, int> open_output(OutputMode mode) {
  if (mode == OutputMode::kDevNull) {
    const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw_errno("open /dev/null");
    return {fd, -1};
  }
  if (mode == OutputMode::kPipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
    return {fds[1], fds[0]};
  }
  return {-1, -1};
}

// Reads the errno the child wrote if exec failed; 0 when exec succeeded (EOF).
int read_exec_error(int error_fd) {
  int error_number = 0;
  ssize_t n;
  do {
    n = ::read(error_fd, &error_number, sizeof(error_number));
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof(error_number)) ? error_number : 0;
}

}  // namespace

SpawnError::SpawnError(const std::string& program, int error_number)
    : std::runtime_error("cannot run " + program + ": " + std::strerror(error_number)),
      error_number_(error_number) {}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw_errno("waitpid");
  }
  return status;
}

Child spawn(const SpawnOptions& options) {
  if (options.argv.empty()) throw std::invalid_argument("spawn: empty argv");
  auto argv = to_c_array(options.argv);
  std::vector<char*> envp;
  if (options.environment) envp = to_c_array(*options.environment);
  const auto [stdout_fd, stdout_read_fd] = open_output(options.stdout_mode);
  const auto [stderr_fd, stderr_read_fd] = open_output(options.stderr_mode);
  const int stdin_fd = options.stdin_from_dev_null ? ::open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
  if (options.stdin_from_dev_null && stdin_fd < 0) throw_errno("open /dev/null");
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) throw_errno("pipe2");
  const pid_t parent = ::getpid();
  // Blocked across fork so that our handlers (which write to the caller's
  // self-pipe) never run in the child before it resets them.
  sigset_t all, previous;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) {
    child_main(options, argv.data(), envp.empty() ? nullptr : envp.data(), parent,
               ChildOutputs{stdin_fd, stdout_fd, stderr_fd}, error_pipe[1]);
  }
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) throw_errno("fork");
  ::close(error_pipe[1]);
  for (int fd : {stdin_fd, stdout_fd, stderr_fd}) {
    if (fd >= 0) ::close(fd);
  }
  const int error_number = read_exec_error(error_pipe[0]);
  ::close(error_pipe[0]);
  if (error_number != 0) {
    for (int fd : {stdout_read_fd, stderr_read_fd}) {
      if (fd >= 0) ::close(fd);
    }
    wait_for(pid);
    throw SpawnError(options.argv[0], error_number);
  }
  return Child{pid, stdout_read_fd, stderr_read_fd};
}

std::string capture_stdout(const std::vector<std::string>& argv) {
  SpawnOptions options;
  options.argv = argv;
  options.stdout_mode = OutputMode::kPipe;
  options.stderr_mode = OutputMode::kDevNull;
  const Child child = spawn(options);
  std::string output;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(child.stdout_fd, buffer, sizeof(buffer))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(child.stdout_fd);
  wait_for(child.pid);
  return output;
}

}  // namespace tnt::cli
