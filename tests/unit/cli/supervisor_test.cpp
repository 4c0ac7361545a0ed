// Supervision of a child standing in for mpirun: exit codes, environment,
// forwarding a signal once, SIGKILL after the grace period, and what
// happens to the child when the supervising process is SIGKILLed.
#include "supervise/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <thread>

#include "common/exit_status.h"
#include "common/spawn.h"
#include "test_support.h"

namespace tnt::cli {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

SuperviseOptions command(const std::string& script, std::chrono::milliseconds delay = 5000ms) {
  SuperviseOptions options;
  options.argv = {"/bin/sh", "-c", script};
  options.kill_delay = delay;
  return options;
}

// Sends `signal_number` to this process after `delay`, from another thread,
// as a user's `kill PID` would.
// Signals this process once `ready` exists (the child script writes it
// after its trap is set: a signal forwarded before that kills the shell
// instead; a loaded machine can take longer than any fixed delay to get
// there; never if it has not after 30 s); then `times` - 1 more, 50 ms apart. The moment
// of the first signal goes to `sent`.
std::thread signal_self_when(const std::string& ready, int signal_number,
                             std::chrono::steady_clock::time_point& sent, int times = 1) {
  return std::thread([=, &sent] {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!std::ifstream(ready).good() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    // No child got there (it failed to start): no signal, which could end
    // this test program after supervise() returned; the test fails on its
    // own checks.
    if (!std::ifstream(ready).good()) return;
    sent = std::chrono::steady_clock::now();
    for (int i = 0; i < times; ++i) {
      ::kill(::getpid(), signal_number);
      std::this_thread::sleep_for(50ms);
    }
  });
}

std::size_t line_count(const std::string& path) {
  std::ifstream file(path);
  std::size_t lines = 0;
  for (std::string line; std::getline(file, line);) ++lines;
  return lines;
}

TEST(Supervisor, ReturnsTheChildsStatus) {
  const auto result = supervise(command("exit 3"));
  EXPECT_EQ(exit_code_of(result.wait_status), 3);
  EXPECT_EQ(result.stop_signal, 0);
}

TEST(Supervisor, PassesTheEnvironmentChangesVerbatim) {
  auto options = command("test \"$B\" = 'two \"words\"' && test \"$HOME\" = /nowhere");
  options.environment = {{"B", "two \"words\""}, {"HOME", "/nowhere"}};
  EXPECT_EQ(exit_code_of(supervise(options).wait_status), 0);
}

TEST(Supervisor, MissingCommandIsASpawnError) {
  SuperviseOptions options;
  options.argv = {"/nonexistent/mpirun"};
  EXPECT_THROW(supervise(options), SpawnError);
}

TEST(Supervisor, ForwardsAKillSignalOnlyOnce) {
  TempDir dir;
  const std::string log = dir.str("got");
  // The child notes every SIGTERM and keeps running; after the grace
  // period the supervisor must SIGKILL it.
  const std::string ready = dir.str("ready");
  const auto options = command("trap 'echo TERM >> " + log + "' TERM; touch " + ready +
                                   "; while :; do sleep 0.05; done",
                               1500ms);
  std::chrono::steady_clock::time_point sent;
  auto sender = signal_self_when(ready, SIGTERM, sent, 3);
  const auto result = supervise(options);
  const auto ended = std::chrono::steady_clock::now();
  sender.join();
  EXPECT_EQ(result.stop_signal, SIGTERM);
  EXPECT_EQ(exit_code_of(result.wait_status), 128 + SIGKILL);
  EXPECT_EQ(line_count(log), 1u) << "SIGTERM must be forwarded exactly once";
  EXPECT_GE(ended - sent, 1500ms) << "the child gets the grace period before SIGKILL";
  EXPECT_LT(ended - sent, 30s);
}

TEST(Supervisor, ChildThatStopsOnTheSignalIsNotKilled) {
  TempDir dir;
  const std::string ready = dir.str("ready");
  std::chrono::steady_clock::time_point sent;
  auto sender = signal_self_when(ready, SIGINT, sent);
  const auto result =
      supervise(command("trap 'exit 7' INT; touch " + ready + "; while :; do sleep 0.05; done"));
  sender.join();
  EXPECT_EQ(result.stop_signal, SIGINT);
  EXPECT_EQ(exit_code_of(result.wait_status), 7);
}

// Whether `pid` is gone: no such process, or a zombie nobody reaps (in a
// container, PID 1 may not reap the orphans it inherits).
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close_paren = line.rfind(')');
  return close_paren == std::string::npos || line.substr(close_paren + 2, 1) == "Z";
}

// How long `pid` took to go away, counted from `since`; nullopt if it is
// still there after `limit`.
std::optional<std::chrono::milliseconds> time_until_gone(
    pid_t pid, std::chrono::steady_clock::time_point since, std::chrono::milliseconds limit) {
  while (std::chrono::steady_clock::now() - since < limit) {
    if (process_gone(pid)) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - since);
    }
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

// Runs supervise(trap; loop) in a forked "launcher", waits until the script
// wrote its pid, SIGKILLs the launcher and returns the script's pid and
// the moment of the kill. The pid is written after the trap is set: written
// before, a loaded machine let the parent-death SIGTERM arrive first.
std::pair<pid_t, std::chrono::steady_clock::time_point> kill_launcher_of(
    const std::string& trap, const std::string& loop, std::chrono::milliseconds kill_delay) {
  TempDir dir;
  const std::string pid_file = dir.str("pid");
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    supervise(command(trap + "; echo $$ > " + pid_file + ".tmp && mv " + pid_file + ".tmp " +
                          pid_file + "; " + loop,
                      kill_delay));
    ::_exit(0);
  }
  pid_t child = 0;
  for (int i = 0; i < 3000 && child == 0; ++i) {
    std::this_thread::sleep_for(10ms);
    std::ifstream(pid_file) >> child;
  }
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  return {child, killed_at};
}

TEST(Supervisor, ChildIsStoppedWhenTheSupervisorIsKilled) {
  const auto [child, killed_at] =
      kill_launcher_of("trap 'exit 0' TERM", "while :; do sleep 0.05; done", 30000ms);
  ASSERT_GT(child, 0) << "the child did not start";
  // "At once" is anything well inside the 30 s delay after which the orphan
  // guard's SIGKILL would have stopped it: a loaded machine (the suite runs
  // tests side by side) can take seconds to wake the shell.
  const auto gone = time_until_gone(child, killed_at, 20000ms);
  if (!gone) ::kill(child, SIGKILL);
  ASSERT_TRUE(gone.has_value())
      << "the child outlived its supervisor by 20 s: SIGTERM (the parent-death signal) should "
         "stop it at once";
}

TEST(Supervisor, ChildIgnoringSigtermIsKilledAfterTheDelayWhenTheSupervisorIsKilled) {
  const auto [child, killed_at] =
      kill_launcher_of("trap '' TERM", "while :; do sleep 0.05; done", 1000ms);
  ASSERT_GT(child, 0) << "the child did not start";
  const auto gone = time_until_gone(child, killed_at, 30000ms);
  if (!gone) ::kill(child, SIGKILL);
  ASSERT_TRUE(gone.has_value()) << "the orphan guard did not SIGKILL the child";
  EXPECT_GE(*gone, 900ms) << "the child should get the delay to stop in order";
}

TEST(Supervisor, EnvironmentWithReplacesAndAppends) {
  ::setenv("TNT_SUPERVISOR_TEST", "old", 1);
  const auto env = environment_with({{"TNT_SUPERVISOR_TEST", "new"}, {"TNT_OTHER", "x y"}});
  EXPECT_EQ(std::count(env.begin(), env.end(), "TNT_SUPERVISOR_TEST=new"), 1);
  EXPECT_EQ(std::count(env.begin(), env.end(), "TNT_SUPERVISOR_TEST=old"), 0);
  EXPECT_EQ(std::count(env.begin(), env.end(), "TNT_OTHER=x y"), 1);
  ::unsetenv("TNT_SUPERVISOR_TEST");
}

// A rank failed, but mpirun does not end (it waits for the daemon of a host
// whose link is down): after failure_grace the supervisor stops it itself,
// so the job ends and can be restarted (tests/cluster/link_down.sh).
TEST(Supervisor, MpirunThatDoesNotEndAfterARankFailedIsStopped) {
  auto options = command(
      "echo 'tarantella: rank 1 on host h1 exited with code 1' >&2; "
      "while :; do sleep 0.05; done");
  options.failure_grace = 400ms;
  const auto start = std::chrono::steady_clock::now();
  const auto result = supervise(options);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(exit_code_of(result.wait_status), 128 + SIGKILL);
  EXPECT_EQ(result.stop_signal, 0) << "not a stop by the user: the job may be restarted";
  EXPECT_EQ(result.first_failed_rank, std::optional<int>(1));
  EXPECT_GE(elapsed, 400ms);
  EXPECT_LT(elapsed, 30000ms);
}

// A host removed mid-run: its daemon and ranks die without a report, mpirun
// says it lost the daemon and then waited a minute before ending.
TEST(Supervisor, MpirunThatLostADaemonAndDoesNotEndIsStopped) {
  auto options = command(
      "echo 'ORTE has lost communication with a remote daemon.' >&2; while :; do sleep 0.05; done");
  options.failure_grace = 300ms;
  const auto result = supervise(options);
  EXPECT_EQ(exit_code_of(result.wait_status), 128 + SIGKILL);
  EXPECT_EQ(result.stop_signal, 0);
}

TEST(Supervisor, MpirunWithoutAFailedRankIsLeftAlone) {
  auto options = command("sleep 0.8; exit 0");
  options.failure_grace = 100ms;
  EXPECT_EQ(exit_code_of(supervise(options).wait_status), 0);
}

}  // namespace
}  // namespace tnt::cli
