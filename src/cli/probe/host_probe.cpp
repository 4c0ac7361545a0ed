// Host probes before a restart; see host_probe.h.
#include "probe/host_probe.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>
#include <sstream>

#include "probe/node_facts.h"
#include "common/exit_status.h"
#include "common/spawn.h"

namespace tnt::cli {
namespace {

using Clock = std::chrono::steady_clock;

// What a probe keeps of the agent's standard error: enough for its last line,
// and for a report sent through it (a host's network addresses).
constexpr std::size_t kKeptErrorBytes = 65536;

std::vector<std::string> split_blanks(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string short_name(const std::string& host) { return host.substr(0, host.find('.')); }

bool program_exists(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  return !find_in_path(program).empty();
}

// OpenMPI's reading of plm_rsh_agent: alternatives separated by ':', the
// first whose program exists wins; with none, the first (its probe then
// says that it cannot be run).
std::vector<std::string> agent_from_value(const std::string& value) {
  std::vector<std::vector<std::string>> alternatives;
  std::istringstream in(value);
  for (std::string part; std::getline(in, part, ':');) {
    auto words = split_blanks(part);
    if (!words.empty()) alternatives.push_back(words);
  }
  if (alternatives.empty()) return default_probe_agent();
  for (const auto& words : alternatives) {
    if (program_exists(words.front())) return words;
  }
  return alternatives.front();
}

std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    last = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
  }
  return last;
}

std::string duration_text(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

// One agent started for one host. The destructor SIGKILLs and reaps an
// agent that is still running, so no probe outlives probe_hosts().
class RunningProbe {
 public:
  RunningProbe(std::string host, const ProbeOptions& probe)
      : host_(std::move(host)), agent_name_(probe.agent.front()) {
    SpawnOptions options;
    options.argv = probe.agent;
    options.argv.push_back(host_);
    options.argv.insert(options.argv.end(), probe.command.begin(), probe.command.end());
    options.stdin_from_dev_null = true;
    options.stdout_mode = OutputMode::kDevNull;
    options.stderr_mode = OutputMode::kPipe;
    options.parent_death_signal = SIGKILL;
    try {
      const Child child = spawn(options);
      pid_ = child.pid;
      fd_ = child.stderr_fd;
    } catch (const SpawnError& error) {
      problem_ = error.what();
      done_ = true;
    }
  }
  ~RunningProbe() {
    if (!done_) {
      ::kill(pid_, SIGKILL);
      wait_for(pid_);
    }
    close_pipe();
  }
  RunningProbe(const RunningProbe&) = delete;
  RunningProbe& operator=(const RunningProbe&) = delete;

  bool done() const { return done_; }
  int fd() const { return done_ ? -1 : fd_; }

  void read_some() {
    char buffer[1024];
    ssize_t n;
    do {
      n = ::read(fd_, buffer, sizeof(buffer));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      close_pipe();
      return;
    }
    error_text_.append(buffer, static_cast<std::size_t>(n));
    if (error_text_.size() > kKeptErrorBytes) {
      error_text_.erase(0, error_text_.size() - kKeptErrorBytes);
    }
  }

  // Reaps the agent if it has ended, keeping what is already in its pipe
  // (something it started may hold the pipe open; that is not waited for).
  void try_reap() {
    if (done_) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return;
    done_ = true;
    pollfd fd{fd_, POLLIN, 0};
    while (fd_ >= 0 && ::poll(&fd, 1, 0) > 0) read_some();
    if (status != 0) problem_ = failure_text(describe_wait_status(status));
  }

  void give_up(std::chrono::milliseconds timeout) {
    ::kill(pid_, SIGKILL);
    wait_for(pid_);
    done_ = true;
    problem_ = "no answer from " + agent_name_ + " within " + duration_text(timeout);
  }

  HostProbe result() const { return HostProbe{host_, problem_, error_text_}; }

 private:
  std::string failure_text(const std::string& how) const {
    const std::string line = last_line(error_text_);
    return agent_name_ + " " + how + (line.empty() ? "" : ": " + line);
  }

  void close_pipe() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  std::string host_;
  std::string agent_name_;
  pid_t pid_ = -1;
  int fd_ = -1;
  bool done_ = false;
  std::string error_text_;
  std::optional<std::string> problem_;
};

// Waits until every probe has ended or the deadline has passed. The poll
// timeout is short because an agent may end while something it started
// still holds its pipe: then only waitpid() tells.
void wait_for_probes(std::vector<std::unique_ptr<RunningProbe>>& probes,
                     Clock::time_point deadline) {
  const auto running = [&] {
    return std::any_of(probes.begin(), probes.end(), [](const auto& p) { return !p->done(); });
  };
  while (running() && Clock::now() < deadline) {
    std::vector<pollfd> fds;
    std::vector<RunningProbe*> owners;
    for (auto& p : probes) {
      if (p->fd() < 0) continue;
      fds.push_back({p->fd(), POLLIN, 0});
      owners.push_back(p.get());
    }
    if (::poll(fds.data(), fds.size(), 20) > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0) owners[i]->read_some();
      }
    }
    for (auto& p : probes) p->try_reap();
  }
}

}  // namespace

const std::vector<std::string>& default_probe_agent() {
  static const std::vector<std::string> agent = {"ssh", "-o", "BatchMode=yes", "-o",
                                                 "ConnectTimeout=5"};
  return agent;
}

std::vector<std::string> probe_agent(const std::vector<McaParameter>& mca,
                                     const std::optional<std::string>& environment_value,
                                     const std::optional<std::string>& environment_args) {
  std::optional<std::string> value = environment_value;
  std::optional<std::string> args = environment_args;
  for (const auto& p : mca) {
    if (p.name == "plm_rsh_agent" || p.name == "orte_rsh_agent") value = p.value;
    if (p.name == "plm_rsh_args" || p.name == "orte_rsh_args") args = p.value;
  }
  std::vector<std::string> agent = value ? agent_from_value(*value) : default_probe_agent();
  if (args) {
    for (auto& word : split_blanks(*args)) agent.push_back(std::move(word));
  }
  return agent;
}

bool is_this_host(const std::string& host, const std::string& this_hostname) {
  const std::string name = lower(host);
  if (name == "localhost" || name == "::1" || name.rfind("127.", 0) == 0) return true;
  if (this_hostname.empty()) return false;
  const std::string here = lower(this_hostname);
  return name == here || name == short_name(here) || short_name(name) == here;
}

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::vector<HostProbe> probe_hosts(const std::vector<std::string>& hosts,
                                   const ProbeOptions& options) {
  const auto deadline = Clock::now() + options.timeout;
  std::vector<std::unique_ptr<RunningProbe>> probes;
  for (const auto& host : hosts) {
    if (!is_this_host(host, options.this_hostname)) {
      probes.push_back(std::make_unique<RunningProbe>(host, options));
    }
  }
  wait_for_probes(probes, deadline);
  std::vector<HostProbe> results;
  auto next = probes.begin();
  for (const auto& host : hosts) {
    if (is_this_host(host, options.this_hostname)) {
      results.push_back(HostProbe{host, std::nullopt, ""});
      continue;
    }
    RunningProbe& probe = **next++;
    if (!probe.done()) probe.give_up(options.timeout);
    results.push_back(probe.result());
  }
  return results;
}

}  // namespace tnt::cli
