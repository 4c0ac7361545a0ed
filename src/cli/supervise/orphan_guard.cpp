// mpirun's backstop against the launcher's death; see orphan_guard.h.
#include "supervise/orphan_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

namespace tnt::cli {
namespace {

int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

void kill_by_pidfd(int pidfd, int signal_number) {
  ::syscall(SYS_pidfd_send_signal, pidfd, signal_number, nullptr, 0);
}

long monotonic_millis() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000L + now.tv_nsec / 1000000L;
}

// Waits until `fd` is readable (true) or `timeout_millis` passed (false).
bool wait_readable(int fd, long timeout_millis) {
  const long deadline = monotonic_millis() + timeout_millis;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const long left = std::max(0L, deadline - monotonic_millis());
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Every descriptor but `keep_low` < `keep_high`: the helper must not hold
// the job's pipes (mpirun would block on a full stderr pipe nobody reads).
void close_all_but(int keep_low, int keep_high) {
  const unsigned ranges[][2] = {
      {0, static_cast<unsigned>(keep_low)},
      {static_cast<unsigned>(keep_low) + 1, static_cast<unsigned>(keep_high)},
      {static_cast<unsigned>(keep_high) + 1, ~0U}};
  for (const auto& r : ranges) {
    if (r[0] >= r[1]) continue;
    if (::syscall(SYS_close_range, r[0], r[1] - 1, 0) == 0) continue;
    for (unsigned fd = r[0]; fd < std::min(r[1], 4096U); ++fd) ::close(static_cast<int>(fd));
  }
}

// The helper; async-signal-safe calls only (we may have been forked from a
// process with threads).
[[noreturn]] void helper_main(int lifeline, int pidfd, long kill_delay_millis) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_IGN);
  for (int sig : {SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  close_all_but(std::min(lifeline, pidfd), std::max(lifeline, pidfd));

  pollfd fds[2] = {{lifeline, POLLIN, 0}, {pidfd, POLLIN, 0}};
  while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
  }
  if (fds[1].revents != 0) ::_exit(0);  // mpirun ended first: nothing to guard
  // The lifeline broke: the launcher is gone (or is done with mpirun).
  // mpirun got SIGTERM from its parent-death signal; it has kill_delay to
  // stop the ranks in its orderly way.
  if (!wait_readable(pidfd, kill_delay_millis)) kill_by_pidfd(pidfd, SIGKILL);
  ::_exit(0);
}

}  // namespace

OrphanGuard::OrphanGuard(pid_t watched, std::chrono::milliseconds kill_delay) {
  const int pidfd = open_pidfd(watched);
  if (pidfd < 0) return;  // no pidfds here: the parent-death signal alone
  int lifeline[2];
  if (::pipe2(lifeline, O_CLOEXEC) != 0) {
    ::close(pidfd);
    return;
  }
  // Blocked across fork so that our handlers never run in the helper.
  sigset_t all, previous;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) helper_main(lifeline[0], pidfd, static_cast<long>(kill_delay.count()));
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  ::close(lifeline[0]);
  ::close(pidfd);
  if (pid < 0) {
    ::close(lifeline[1]);
    return;
  }
  helper_ = pid;
  lifeline_fd_ = lifeline[1];
}

OrphanGuard::~OrphanGuard() {
  if (helper_ <= 0) return;
  ::close(lifeline_fd_);
  int status = 0;
  while (::waitpid(helper_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace tnt::cli
