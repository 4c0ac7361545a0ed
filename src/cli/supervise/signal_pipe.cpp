// Self-pipe signal delivery; see signal_pipe.h.
#include "supervise/signal_pipe.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace tnt::cli {
namespace {

// The handler cannot reach an object, so the write end lives here; the
// SignalPipe constructor refuses a second instance.
volatile sig_atomic_t g_write_fd = -1;

void on_signal(int number, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;
  const CaughtSignal caught{number, info ? info->si_code : 0, info ? info->si_pid : 0};
  // A full pipe (thousands of pending signals) drops the event; the loop
  // reacts to the first of each kind anyway.
  ssize_t ignored = ::write(g_write_fd, &caught, sizeof(caught));
  (void)ignored;
  errno = saved_errno;
}

}  // namespace

SignalPipe::SignalPipe(std::initializer_list<int> signals) : signals_(signals) {
  if (g_write_fd != -1) throw std::logic_error("only one SignalPipe may exist at a time");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  g_write_fd = write_fd_;
  struct sigaction action {};
  action.sa_sigaction = on_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&action.sa_mask);
  previous_.resize(signals_.size());
  for (std::size_t i = 0; i < signals_.size(); ++i) {
    ::sigaction(signals_[i], &action, &previous_[i]);
  }
}

SignalPipe::~SignalPipe() {
  for (std::size_t i = 0; i < signals_.size(); ++i) {
    ::sigaction(signals_[i], &previous_[i], nullptr);
  }
  g_write_fd = -1;
  ::close(read_fd_);
  ::close(write_fd_);
}

std::vector<CaughtSignal> SignalPipe::drain() {
  std::vector<CaughtSignal> result;
  CaughtSignal caught;
  while (::read(read_fd_, &caught, sizeof(caught)) == static_cast<ssize_t>(sizeof(caught))) {
    result.push_back(caught);
  }
  return result;
}

}  // namespace tnt::cli
