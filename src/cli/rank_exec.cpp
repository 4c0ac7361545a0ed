// The per-rank wrapper; see rank_exec.h.
//
// Signals: OpenMPI puts every process it starts (this wrapper) into its own
// process group and stops a job by signalling that whole group (verified
// with OpenMPI 4.1), so the program, which stays in our group, already
// receives those signals; a signal sent by our parent while we lead our
// group is therefore not passed on again. Any other signal (a user's kill
// of this pid, or any signal when we were started outside mpirun) is passed
// on: to our whole group when we lead it, so the program's own children get
// it too, else to the program. If our parent dies without stopping us (mpirun was
// SIGKILLed), we stop the program ourselves: SIGTERM, then SIGKILL.
#include "rank_exec.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "exit_status.h"
#include "line_prefixer.h"
#include "node_facts.h"
#include "rank_exec_options.h"
#include "signal_pipe.h"
#include "spawn.h"
#include "thread_rule.h"

namespace tnt::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kOrphanKillDelay = std::chrono::seconds(3);
constexpr int kPollMillis = 250;

// Where this rank sits in the job, from the variables OpenMPI sets.
struct RankIdentity {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  std::string host;
};

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  return (*end == '\0' && parsed >= 0) ? static_cast<int>(parsed) : fallback;
}

RankIdentity identify_rank() {
  RankIdentity id;
  id.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
  id.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  id.local_size = std::max(1, env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1));
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  id.host = host;
  return id;
}

std::string rank_label(const RankIdentity& id) {
  return "rank " + std::to_string(id.rank) + " on host " + id.host;
}

// numactl in front of the command binds the rank to NUMA node
// local_rank % nodes; the launcher checked there are enough nodes.
std::vector<std::string> pinned_command(const RankExecCommand& parsed, const RankIdentity& id) {
  const auto& o = parsed.options;
  if (!o.pin_cpu && !o.pin_memory) return parsed.command;
  const std::string node = std::to_string(id.local_rank % count_numa_nodes());
  std::vector<std::string> command{"numactl"};
  if (o.pin_cpu) command.push_back("--cpunodebind=" + node);
  if (o.pin_memory) command.push_back("--membind=" + node);
  command.push_back("--");
  command.insert(command.end(), parsed.command.begin(), parsed.command.end());
  return command;
}

OutputMode output_mode(const RankExecOptions& options, const RankIdentity& id) {
  if (options.output_on_all_devices) return OutputMode::kPipe;
  return id.rank == 0 ? OutputMode::kInherit : OutputMode::kDevNull;
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // mpirun's end of the pipe is gone: output is lost, not fatal
    done += static_cast<std::size_t>(n);
  }
}

// Waits for the program, relaying its output and passing signals on.
class ChildWatch {
 public:
  ChildWatch(const Child& child, const RankIdentity& id, SignalPipe& signals)
      : child_(child),
        prefixer_("[" + std::to_string(id.rank) + "] "),
        signals_(signals),
        parent_(::getppid()) {}

  // Returns the wait status of the program.
  int run() {
    while (!status_) {
      wait_for_events();
      handle_signals();
      check_parent();
      check_deadline();
      reap();
    }
    drain_output();
    return *status_;
  }
  // The signal that asked us to stop, 0 if none.
  int stop_signal() const { return stop_signal_; }

 private:
  void wait_for_events() {
    pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {child_.stdout_fd, POLLIN, 0}};
    const int count = child_.stdout_fd >= 0 ? 2 : 1;
    if (::poll(fds, count, kPollMillis) > 0 && count == 2 && fds[1].revents != 0) relay_output();
  }

  // One read; returns false at EOF or when nothing is available.
  bool relay_output() {
    char buffer[8192];
    const ssize_t n = ::read(child_.stdout_fd, buffer, sizeof(buffer));
    if (n > 0) {
      write_all(STDOUT_FILENO,
                prefixer_.feed(std::string_view(buffer, static_cast<std::size_t>(n))));
      return true;
    }
    if (n == 0 || (errno != EINTR && errno != EAGAIN)) close_output();
    return false;
  }

  // After the program exited, its background children may still hold the
  // pipe open, so read only what is already there instead of waiting for EOF.
  void drain_output() {
    if (child_.stdout_fd >= 0) {
      ::fcntl(child_.stdout_fd, F_SETFL, O_NONBLOCK);
      while (child_.stdout_fd >= 0 && relay_output()) {
      }
      close_output();
    }
    write_all(STDOUT_FILENO, prefixer_.finish());
  }

  void close_output() {
    if (child_.stdout_fd >= 0) ::close(child_.stdout_fd);
    child_.stdout_fd = -1;
  }

  void handle_signals() {
    for (const auto& s : signals_.drain()) {
      if (s.number == SIGCHLD || s.sender == ::getpid()) continue;  // reap() handles SIGCHLD
      if (stop_signal_ == 0) stop_signal_ = s.number;
      if (!sent_to_our_group(s)) pass_on(s.number);
    }
  }

  // Under mpirun we lead our own process group and our parent signals the
  // whole group, so the program has this signal already.
  bool sent_to_our_group(const CaughtSignal& s) const {
    return s.sender == parent_ && ::getpgrp() == ::getpid();
  }

  void check_parent() {
    if (orphan_deadline_ || ::getppid() == parent_) return;
    if (stop_signal_ == 0) stop_signal_ = SIGTERM;
    pass_on(SIGTERM);
    orphan_deadline_ = Clock::now() + kOrphanKillDelay;
  }

  void check_deadline() {
    if (orphan_deadline_ && Clock::now() >= *orphan_deadline_) pass_on(SIGKILL);
  }

  // Signals the program and everything it started when we lead the process
  // group (as under mpirun), else just the program. A group SIGKILL ends us
  // too; it is only sent once our parent is gone and nobody awaits a report.
  void pass_on(int signal_number) {
    if (::getpgrp() == ::getpid()) {
      ::kill(-::getpgrp(), signal_number);
    } else {
      ::kill(child_.pid, signal_number);
    }
  }

  void reap() {
    int status = 0;
    const pid_t done = ::waitpid(child_.pid, &status, WNOHANG);
    if (done == child_.pid) status_ = status;
  }

  Child child_;
  LinePrefixer prefixer_;
  SignalPipe& signals_;
  const pid_t parent_;
  int stop_signal_ = 0;
  std::optional<int> status_;
  std::optional<Clock::time_point> orphan_deadline_;
};

void apply_thread_rule(const RankExecOptions& options, const RankIdentity& id) {
  if (!options.set_omp_threads) return;
  const int threads = threads_per_rank(usable_core_count(), id.local_size);
  ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
}

int report(const RankIdentity& id, int status, int stop_signal) {
  const int code = exit_code_of(status);
  // When the job is being stopped, every rank ends this way; only the rank
  // that failed on its own is worth naming.
  if (code != 0 && stop_signal == 0) {
    std::cerr << "tarantella: " << rank_label(id) << " " << describe_wait_status(status)
              << std::endl;
  }
  return code;
}

}  // namespace

int run_rank_exec(const std::vector<std::string>& args) {
  const RankExecCommand parsed = parse_rank_exec(args);
  const RankIdentity id = identify_rank();
  apply_thread_rule(parsed.options, id);
  ::signal(SIGPIPE, SIG_IGN);  // a vanished reader must not kill us before we report

  SignalPipe signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD});
  SpawnOptions spawn_options;
  spawn_options.argv = pinned_command(parsed, id);
  spawn_options.stdout_mode = output_mode(parsed.options, id);
  spawn_options.die_with_parent = true;
  Child child;
  try {
    child = spawn(spawn_options);
  } catch (const SpawnError& error) {
    std::cerr << "tarantella: " << rank_label(id) << ": " << error.what()
              << " (is it installed at the same path on every host?)" << std::endl;
    return 127;
  }
  ChildWatch watch(child, id, signals);
  const int status = watch.run();
  return report(id, status, watch.stop_signal());
}

}  // namespace tnt::cli
