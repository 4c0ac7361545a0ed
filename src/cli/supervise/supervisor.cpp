// mpirun supervision; see supervisor.h for the signal policy.
#include "supervise/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "supervise/orphan_guard.h"
#include "supervise/output_relay.h"
#include "supervise/report_filter.h"
#include "supervise/signal_pipe.h"
#include "common/spawn.h"

extern char** environ;

namespace tnt::cli {
namespace {

using Clock = std::chrono::steady_clock;

class MpirunWatch {
 public:
  MpirunWatch(pid_t pid, OutputRelay stderr_relay, SignalPipe& signals,
              std::shared_ptr<const ReportFilter> reports, const SuperviseOptions& options)
      : pid_(pid),
        stderr_relay_(std::move(stderr_relay)),
        signals_(signals),
        reports_(std::move(reports)),
        kill_delay_(options.kill_delay),
        failure_grace_(options.failure_grace) {}

  // Returns mpirun's wait status and the first stop signal we received.
  std::pair<int, int> run() {
    while (!status_) {
      wait_for_events();
      for (const auto& s : signals_.drain()) on_signal(s);
      check_failure_grace();
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
    const std::optional<Clock::time_point> next = kill_at_ ? kill_at_ : stop_at_;
    if (!next) return 1000;  // SIGCHLD wakes us; the timeout is only a safety net
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now());
    return static_cast<int>(std::max<long>(0, std::min<long>(left.count(), 1000)));
  }

  // A rank has failed: mpirun should end by itself soon; if it does not (a
  // host cut off), it is stopped as if the user had sent SIGTERM.
  void check_failure_grace() {
    if (kill_at_) return;  // already being stopped
    if (!stop_at_) {
      if (reports_->first_failed_rank() || reports_->daemon_lost()) {
        stop_at_ = Clock::now() + failure_grace_;
      }
      return;
    }
    if (Clock::now() < *stop_at_) return;
    // SIGKILL, not SIGTERM: mpirun is already aborting the job, and a
    // SIGTERM then makes it crash in its PMIx finalize (OpenMPI 4.1).
    const auto rank = reports_->first_failed_rank();
    std::cerr << "tarantella: mpirun has not ended " << failure_grace_.count() / 1000.0
              << " s after "
              << (rank ? "rank " + std::to_string(*rank) + " failed" : "it lost a host's daemon")
              << " (a host may be cut off or gone, so its ranks cannot be stopped): killing mpirun"
              << std::endl;
    ::kill(pid_, SIGKILL);
    forwarded_ = true;
    kill_at_ = Clock::now();
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
  const std::shared_ptr<const ReportFilter> reports_;
  const std::chrono::milliseconds kill_delay_;
  const std::chrono::milliseconds failure_grace_;
  int stop_signal_ = 0;
  bool forwarded_ = false;
  std::optional<Clock::time_point> stop_at_;  ///< failure_grace after a rank's failure
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
      MpirunWatch(child.pid, std::move(relay), signals, reports, options).run();
  return SupervisedResult{wait_status, stop_signal, reports->first_failed_rank(),
                          reports->other_failed_ranks()};
}

}  // namespace tnt::cli
