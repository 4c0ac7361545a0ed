// Supervision of a child standing in for mpirun: exit codes, environment,
// forwarding a signal once, and SIGKILL after the grace period.
#include "supervisor.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "exit_status.h"
#include "spawn.h"
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
std::thread signal_self_after(std::chrono::milliseconds delay, int signal_number, int times = 1) {
  return std::thread([=] {
    std::this_thread::sleep_for(delay);
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
  const auto options =
      command("trap 'echo TERM >> " + log + "' TERM; while :; do sleep 0.05; done", 1500ms);
  auto sender = signal_self_after(300ms, SIGTERM, 3);
  const auto start = std::chrono::steady_clock::now();
  const auto result = supervise(options);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  sender.join();
  EXPECT_EQ(result.stop_signal, SIGTERM);
  EXPECT_EQ(exit_code_of(result.wait_status), 128 + SIGKILL);
  EXPECT_EQ(line_count(log), 1u) << "SIGTERM must be forwarded exactly once";
  EXPECT_GE(elapsed, 1500ms);
  EXPECT_LT(elapsed, 4000ms);
}

TEST(Supervisor, ChildThatStopsOnTheSignalIsNotKilled) {
  auto sender = signal_self_after(200ms, SIGINT);
  const auto result = supervise(command("trap 'exit 7' INT; while :; do sleep 0.05; done"));
  sender.join();
  EXPECT_EQ(result.stop_signal, SIGINT);
  EXPECT_EQ(exit_code_of(result.wait_status), 7);
}

TEST(Supervisor, EnvironmentWithReplacesAndAppends) {
  ::setenv("TNT_SUPERVISOR_TEST", "old", 1);
  const auto env = environment_with({{"TNT_SUPERVISOR_TEST", "new"}, {"TNT_OTHER", "x y"}});
  EXPECT_EQ(std::count(env.begin(), env.end(), "TNT_SUPERVISOR_TEST=new"), 1);
  EXPECT_EQ(std::count(env.begin(), env.end(), "TNT_SUPERVISOR_TEST=old"), 0);
  EXPECT_EQ(std::count(env.begin(), env.end(), "TNT_OTHER=x y"), 1);
  ::unsetenv("TNT_SUPERVISOR_TEST");
}

}  // namespace
}  // namespace tnt::cli
