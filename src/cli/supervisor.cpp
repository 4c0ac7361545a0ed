// mpirun supervision; see supervisor.h for the signal policy.
#include "supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "orphan_guard.h"
#include "output_relay.h"
#include "report_filter.h"
#include "signal_pipe.h"
#include "spawn.h"

extern char** environ;

namespace tnt::cli {
namespace {

using Clock = std::chrono::steady_clock;

class MpirunWatch {
 public:
  MpirunWatch(pid_t pid, OutputRelay stderr_relay, SignalPipe& signals,
              std::chrono::milliseconds kill_delay)
      : pid_(pid),
        stderr_relay_(std::move(stderr_relay)),
        signals_(signals),
        kill_delay_(kill_delay) {}

  // Returns mpirun's wait status and the first stop signal we received.
  std::pair<int, int> run() {
    while (!status_) {
      wait_for_events();
      for (const auto& s : signals_.drain()) on_signal(s);
      if (kill_at_ && Clock::now() >= *kill_at_) ::kill(pid_, SIGKILL);
      reap();
    }
    // Processes mpirun started (ssh) may still hold the pipe: take what is there.
    stderr_relay_.finish();
    return {*status_, stop_signal_};
  }

 private:
  void wait_for_events() {
    pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {stderr_relay_.fd(), POLLIN, 0}};  // -1: skipped
    if (::poll(fds, 2, poll_timeout_millis()) > 0 && fds[1].revents != 0) {
      stderr_relay_.relay_once();
    }
  }

  int poll_timeout_millis() const {
    if (!kill_at_) return 1000;  // SIGCHLD wakes us; the timeout is only a safety net
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at_ - Clock::now());
    return static_cast<int>(std::max<long>(0, std::min<long>(left.count(), 1000)));
  }

  void on_signal(const CaughtSignal& s) {
    if (s.number == SIGCHLD) return;
    if (stop_signal_ == 0) {
      stop_signal_ = s.number;
      kill_at_ = Clock::now() + kill_delay_;
    }
    // SI_KERNEL: typed at the terminal, so mpirun (same process group) has it too.
    if (s.code != SI_KERNEL && !forwarded_) {
      ::kill(pid_, s.number);
      forwarded_ = true;
    }
  }

  void reap() {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
  }

  const pid_t pid_;
  OutputRelay stderr_relay_;
  SignalPipe& signals_;
  const std::chrono::milliseconds kill_delay_;
  int stop_signal_ = 0;
  bool forwarded_ = false;
  std::optional<Clock::time_point> kill_at_;
  std::optional<int> status_;
};

bool has_name(const std::string& entry, const std::string& name) {
  return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
         entry[name.size()] == '=';
}

}  // namespace

std::vector<std::string> environment_with(const std::vector<EnvAssignment>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    bool replaced = false;
    for (const auto& change : changes) replaced = replaced || has_name(*e, change.name);
    if (!replaced) env.emplace_back(*e);
  }
  for (const auto& change : changes) env.push_back(change.name + "=" + change.value);
  return env;
}

SupervisedResult supervise(const SuperviseOptions& options) {
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD});
  SpawnOptions spawn_options;
  spawn_options.argv = options.argv;
  spawn_options.environment = environment_with(options.environment);
  spawn_options.stderr_mode = OutputMode::kPipe;
  spawn_options.parent_death_signal = SIGTERM;  // we were SIGKILLed: stop in order
  const Child child = spawn(spawn_options);
  const OrphanGuard guard(child.pid, options.kill_delay);  // ... or be SIGKILLed
  auto reports = std::make_shared<ReportFilter>();
  OutputRelay relay(child.stderr_fd, ConsoleSink{STDERR_FILENO, reports}, nullptr);
  const auto [wait_status, stop_signal] =
      MpirunWatch(child.pid, std::move(relay), signals, options.kill_delay).run();
  return SupervisedResult{wait_status, stop_signal, reports->first_failed_rank(),
                          reports->other_failed_ranks()};
}

}  // namespace tnt::cli
