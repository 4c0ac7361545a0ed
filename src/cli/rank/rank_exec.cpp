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
#include "rank/rank_exec.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/launcher_error.h"
#include "probe/node_facts.h"
#include "probe/slurm_allocation.h"
#include "rank/rank_exec_options.h"
#include "rank/thread_rule.h"
#include "common/exit_status.h"
#include "supervise/line_prefixer.h"
#include "supervise/output_files.h"
#include "supervise/output_relay.h"
#include "supervise/signal_pipe.h"
#include "common/spawn.h"

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

// Under srun (--srun) there is no mpirun to set OMPI_COMM_WORLD_*: Slurm's
// own variables say the same, the local size being this node's entry of
// SLURM_STEP_TASKS_PER_NODE.
int slurm_local_size() {
  const char* counts = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  const int node = env_int("SLURM_NODEID", 0);
  if (counts == nullptr) return 1;
  try {
    const auto per_node = expand_count_list(counts, "SLURM_STEP_TASKS_PER_NODE");
    return node < static_cast<int>(per_node.size()) ? per_node[node] : 1;
  } catch (const LauncherError&) {
    return 1;
  }
}

// The program sees OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE} however
// its rank was started, so scripts that read them work under --srun too.
void export_identity(const RankIdentity& id) {
  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) return;  // mpirun set them
  if (std::getenv("SLURM_PROCID") == nullptr) return;          // not a task of srun
  ::setenv("OMPI_COMM_WORLD_RANK", std::to_string(id.rank).c_str(), 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(id.local_rank).c_str(), 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(id.local_size).c_str(), 1);
  if (const char* size = std::getenv("SLURM_STEP_NUM_TASKS")) {
    ::setenv("OMPI_COMM_WORLD_SIZE", size, 1);
  }
}

RankIdentity identify_rank() {
  RankIdentity id;
  id.rank = env_int("OMPI_COMM_WORLD_RANK", env_int("SLURM_PROCID", 0));
  id.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("SLURM_LOCALID", 0));
  id.local_size = std::max(1, env_int("OMPI_COMM_WORLD_LOCAL_SIZE", slurm_local_size()));
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

// With --output-filename every stream goes through us, to be copied into
// the files; otherwise only a stream whose console text we change does.
OutputMode stdout_mode(const RankExecOptions& options, const RankIdentity& id) {
  if (options.output_directory || options.output_on_all_devices) return OutputMode::kPipe;
  return id.rank == 0 ? OutputMode::kInherit : OutputMode::kDevNull;
}

OutputMode stderr_mode(const RankExecOptions& options) {
  return options.output_directory ? OutputMode::kPipe : OutputMode::kInherit;
}

// What the console shows of the program's stdout: rank 0's as is, every
// rank's prefixed with --output-on-all-devices, nothing of other ranks.
ConsoleSink stdout_console(const RankExecOptions& options, const RankIdentity& id) {
  if (options.output_on_all_devices) {
    return ConsoleSink{STDOUT_FILENO,
                       std::make_shared<LinePrefixer>("[" + std::to_string(id.rank) + "] ")};
  }
  return ConsoleSink{id.rank == 0 ? STDOUT_FILENO : -1, nullptr};
}

// DIR/rank.N/stdout and stderr, opened before the program starts so that a
// rank that cannot write its files fails before it trains.
struct RankFiles {
  std::unique_ptr<OutputFile> out;
  std::unique_ptr<OutputFile> err;
};

// Throws std::runtime_error naming the path that could not be created.
RankFiles open_rank_files(const RankExecOptions& options, const RankIdentity& id) {
  if (!options.output_directory) return {};
  const std::string dir = rank_output_directory(*options.output_directory, id.rank);
  if (const auto problem = make_directories(dir)) throw std::runtime_error(*problem);
  return RankFiles{std::make_unique<OutputFile>(dir + "/stdout", rank_label(id)),
                   std::make_unique<OutputFile>(dir + "/stderr", rank_label(id))};
}

std::vector<OutputRelay> relays_for(const Child& child, const RankExecOptions& options,
                                    const RankIdentity& id, RankFiles files) {
  std::vector<OutputRelay> relays;
  if (child.stdout_fd >= 0) {
    relays.emplace_back(child.stdout_fd, stdout_console(options, id), std::move(files.out));
  }
  if (child.stderr_fd >= 0) {
    relays.emplace_back(child.stderr_fd, ConsoleSink{STDERR_FILENO, nullptr}, std::move(files.err));
  }
  return relays;
}

// Waits for the program, relaying its output and passing signals on.
class ChildWatch {
 public:
  ChildWatch(const Child& child, std::vector<OutputRelay> relays, SignalPipe& signals)
      : child_(child), relays_(std::move(relays)), signals_(signals), parent_(::getppid()) {}

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
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    for (const auto& relay : relays_) fds.push_back({relay.fd(), POLLIN, 0});  // -1: skipped
    if (::poll(fds.data(), fds.size(), kPollMillis) <= 0) return;
    for (std::size_t i = 0; i < relays_.size(); ++i) {
      if (fds[i + 1].revents != 0) relays_[i].relay_once();
    }
  }

  // After the program exited, its background children may still hold the
  // pipes open, so each relay copies only what is already there.
  void drain_output() {
    for (auto& relay : relays_) relay.finish();
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
  std::vector<OutputRelay> relays_;
  SignalPipe& signals_;
  const pid_t parent_;
  int stop_signal_ = 0;
  std::optional<int> status_;
  std::optional<Clock::time_point> orphan_deadline_;
};

// The job trains on the CPU: the program sees no GPU either, so that its
// own device lines agree with the engine's.
void hide_gpus(const RankExecOptions& options) {
  if (options.hide_gpus) ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
}

void apply_thread_rule(const RankExecOptions& options, const RankIdentity& id) {
  if (!options.set_omp_threads) return;
  const int threads = threads_per_rank(usable_core_count(), id.local_size);
  ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 1);
}

// A pipelined model's rank writes its role ("stage 1 of 2, pipeline 1") to
// the file named by TNT_RANK_ROLE_FILE (src/stages/groups.cpp), so that a
// rank killed by a signal is named by its stage and pipeline too. The file
// lives in memory (memfd, inherited by the rank as /proc/self/fd/N): nothing
// is left behind, even when this wrapper is killed with SIGKILL. Where
// memfd_create is refused, a file in /tmp, removed at the end.
class RankRoleFile {
 public:
  RankRoleFile() {
    fd_ = static_cast<int>(::syscall(SYS_memfd_create, "tnt-rank-role", 0U));
    if (fd_ >= 0) {
      path_ = "/proc/self/fd/" + std::to_string(fd_);
    } else {
      char path[] = "/tmp/tnt-role-XXXXXX";
      const int fd = ::mkstemp(path);
      if (fd < 0) return;  // then the rank is named without its role
      ::close(fd);
      path_ = path;
      temporary_ = true;
    }
    ::setenv("TNT_RANK_ROLE_FILE", path_.c_str(), 1);
  }
  ~RankRoleFile() {
    if (fd_ >= 0) ::close(fd_);
    if (temporary_) ::unlink(path_.c_str());
  }
  RankRoleFile(const RankRoleFile&) = delete;
  RankRoleFile& operator=(const RankRoleFile&) = delete;
  std::string read() const {
    std::string role;
    if (fd_ >= 0) {
      char buffer[256];
      const ssize_t n = ::pread(fd_, buffer, sizeof buffer, 0);
      if (n > 0) role.assign(buffer, static_cast<std::size_t>(n));
      role = role.substr(0, role.find('\n'));
    } else if (temporary_) {
      std::ifstream in(path_);
      std::getline(in, role);
    }
    return role;
  }

 private:
  int fd_ = -1;
  bool temporary_ = false;
  std::string path_;
};

int report(const RankIdentity& id, const std::string& role, int status, int stop_signal) {
  const int code = exit_code_of(status);
  // When the job is being stopped, every rank ends this way; only the rank
  // that failed on its own is worth naming.
  if (code != 0 && stop_signal == 0) {
    const std::string label =
        role.empty() ? rank_label(id)
                     : "rank " + std::to_string(id.rank) + " (on host " + id.host + ", " + role + ")";
    std::cerr << "tarantella: " << label << " " << describe_wait_status(status) << std::endl;
  }
  return code;
}

}  // namespace

int run_rank_exec(const std::vector<std::string>& args) {
  const RankExecCommand parsed = parse_rank_exec(args);
  const RankIdentity id = identify_rank();
  export_identity(id);
  apply_thread_rule(parsed.options, id);
  hide_gpus(parsed.options);
  // A rank's stdout is a pipe (ours, mpirun's under srun): stdio then
  // buffers in blocks, and Python's lines would come when the buffer fills,
  // or be lost with a rank that dies. Unless the user chose otherwise,
  // Python writes each line through.
  ::setenv("PYTHONUNBUFFERED", "1", /*overwrite=*/0);
  ::signal(SIGPIPE, SIG_IGN);  // a vanished reader must not kill us before we report

  RankFiles files;
  try {
    files = open_rank_files(parsed.options, id);
  } catch (const std::runtime_error& error) {
    std::cerr << "tarantella: " << rank_label(id) << ": --output-filename: " << error.what()
              << "; the program was not started" << std::endl;
    return kUsageExitCode;
  }

  const RankRoleFile role_file;
  SignalPipe signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD});
  SpawnOptions spawn_options;
  spawn_options.argv = pinned_command(parsed, id);
  spawn_options.stdout_mode = stdout_mode(parsed.options, id);
  spawn_options.stderr_mode = stderr_mode(parsed.options);
  spawn_options.parent_death_signal = SIGKILL;
  Child child;
  try {
    child = spawn(spawn_options);
  } catch (const SpawnError& error) {
    std::cerr << "tarantella: " << rank_label(id) << ": " << error.what()
              << " (is it installed at the same path on every host?)" << std::endl;
    return 127;
  }
  ChildWatch watch(child, relays_for(child, parsed.options, id, std::move(files)), signals);
  const int status = watch.run();
  return report(id, role_file.read(), status, watch.stop_signal());
}

}  // namespace tnt::cli
