// Wait statuses as words and as shell-style exit codes, from real children.
#include "common/exit_status.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

namespace tnt::cli {
namespace {

using ::testing::HasSubstr;

// Forks a child that runs `body` and returns its wait status.
template <typename F>
int status_of_child(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(ExitStatus, NormalExit) {
  const int status = status_of_child([] { ::_exit(3); });
  EXPECT_EQ(exit_code_of(status), 3);
  EXPECT_EQ(describe_wait_status(status), "exited with code 3");
  EXPECT_EQ(exit_code_of(status_of_child([] {})), 0);
}

TEST(ExitStatus, DeathBySignal) {
  const int status = status_of_child([] {
    ::signal(SIGTERM, SIG_DFL);
    ::kill(::getpid(), SIGTERM);
    ::pause();
  });
  EXPECT_EQ(exit_code_of(status), 128 + SIGTERM);
  EXPECT_EQ(describe_wait_status(status), "was killed by signal 15 (Terminated)");
}

TEST(ExitStatus, SegmentationFaultIsNamed) {
  const int status = status_of_child([] {
    ::signal(SIGSEGV, SIG_DFL);
    ::kill(::getpid(), SIGSEGV);
    ::pause();
  });
  EXPECT_EQ(exit_code_of(status), 139);
  EXPECT_THAT(describe_wait_status(status),
              HasSubstr("was killed by signal 11 (Segmentation fault)"));
}

}  // namespace
}  // namespace tnt::cli
