// Cleanup's process matching, on a fake /proc built in a temp directory:
// exact path matches only, scripts through the first argument past the
// interpreter's options, never other users'
// processes, never ourselves or our ancestors.
#include "cleanup/process_table.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/program_path.h"
#include "test_support.h"

namespace tnt::cli {
namespace {

using testing::TempDir;
using ::testing::UnorderedElementsAre;
namespace fs = std::filesystem;

class FakeProc : public ::testing::Test {
 protected:
  FakeProc() {
    for (const char* file : {"bin/prog", "bin/prog2", "bin/python", "work/train.py"}) {
      dir.write(file, "");
    }
    fs::create_symlink(dir.str("bin/prog"), dir.str("bin/prog-link"));
    program = dir.str("bin/prog");
  }

  // Adds /proc/<pid> with status, exe (a symlink, like the kernel's), cmdline and cwd.
  void add(pid_t pid, pid_t parent, unsigned uid, const std::string& exe,
           const std::vector<std::string>& argv, const std::string& cwd = "/") {
    const std::string base = "proc/" + std::to_string(pid);
    dir.write(base + "/status", "Name:\tx\nPPid:\t" + std::to_string(parent) + "\nUid:\t" +
                                    std::to_string(uid) + "\t" + std::to_string(uid) + "\t0\t0\n");
    std::string cmdline;
    for (const auto& a : argv) cmdline += a + '\0';
    dir.write(base + "/cmdline", cmdline);
    if (!exe.empty()) fs::create_symlink(exe, dir.str(base + "/exe"));
    fs::create_symlink(cwd, dir.str(base + "/cwd"));
  }

  std::vector<pid_t> targets(unsigned uid, const std::set<pid_t>& protected_pids = {}) {
    return select_cleanup_targets(scan_processes(dir.str("proc")), program, uid, protected_pids);
  }

  TempDir dir;
  std::string program;
};

TEST_F(FakeProc, MatchesTheExactExecutableOnly) {
  add(100, 1, 1000, dir.str("bin/prog"), {"prog", "--flag"});
  add(101, 1, 1000, dir.str("bin/prog2"), {"prog2"});  // name shares a prefix
  add(102, 1, 1000, "/usr/bin/sleep", {"sleep", dir.str("bin/prog") + "x"});
  add(103, 1, 1000, dir.str("bin/prog-link"), {"prog-link"});  // same file through a link
  EXPECT_THAT(targets(1000), UnorderedElementsAre(100, 103));
}

TEST_F(FakeProc, MatchesScriptsThroughArgv1EvenWhenRelative) {
  program = dir.str("work/train.py");
  add(200, 1, 1000, dir.str("bin/python"), {"python", "train.py", "--epochs"}, dir.str("work"));
  add(201, 1, 1000, dir.str("bin/python"), {"python", dir.str("work/train.py")});
  add(202, 1, 1000, dir.str("bin/python"), {"python", "other.py"}, dir.str("work"));
  add(203, 1, 1000, dir.str("bin/python"), {"python"});
  // Past the interpreter's options (--python-interpreter "python3 -u", "-X dev").
  add(204, 1, 1000, dir.str("bin/python"), {"python", "-u", "train.py"}, dir.str("work"));
  add(205, 1, 1000, dir.str("bin/python"), {"python", "-X", "dev", dir.str("work/train.py")});
  EXPECT_THAT(targets(1000), UnorderedElementsAre(200, 201, 204, 205));
}

TEST_F(FakeProc, MatchesAProgramWhoseFileWasDeletedOrRebuilt) {
  add(300, 1, 1000, dir.str("bin/prog") + " (deleted)", {"prog"});
  EXPECT_THAT(targets(1000), UnorderedElementsAre(300));
}

TEST_F(FakeProc, OnlyTheGivenUsersProcesses) {
  add(400, 1, 1000, dir.str("bin/prog"), {"prog"});
  add(401, 1, 2000, dir.str("bin/prog"), {"prog"});
  EXPECT_THAT(targets(1000), UnorderedElementsAre(400));
  EXPECT_THAT(targets(2000), UnorderedElementsAre(401));
}

TEST_F(FakeProc, NeverItselfOrItsAncestors) {
  add(500, 1, 1000, dir.str("bin/prog"), {"prog"});
  add(501, 500, 1000, dir.str("bin/prog"), {"prog"});
  add(502, 501, 1000, dir.str("bin/prog"), {"prog"});
  add(503, 500, 1000, dir.str("bin/prog"), {"prog"});
  const auto processes = scan_processes(dir.str("proc"));
  const auto chain = self_and_ancestors(processes, 502);
  EXPECT_EQ(chain, (std::set<pid_t>{502, 501, 500, 1}));
  EXPECT_THAT(select_cleanup_targets(processes, program, 1000, chain), UnorderedElementsAre(503));
}

TEST_F(FakeProc, SkipsKernelThreadsAndNonProcessEntries) {
  add(2, 0, 1000, "", {});  // kernel thread: no exe, empty cmdline
  dir.write("proc/self/status", "Uid:\t1000\n");
  dir.write("proc/meminfo", "");
  add(600, 1, 1000, dir.str("bin/prog"), {"prog"});
  const auto processes = scan_processes(dir.str("proc"));
  EXPECT_EQ(processes.size(), 2u);
  EXPECT_THAT(targets(1000), UnorderedElementsAre(600));
}

TEST(ProcessTable, RunsProgramRequiresAProgram) {
  ProcessInfo info;
  EXPECT_FALSE(runs_program(info, ""));  // empty executable must not match an empty program
}

TEST(ProcessTable, RealProcFindsThisTestByItsExecutable) {
  const auto processes = scan_processes("/proc");
  const std::string self = real_path("/proc/self/exe");
  const auto targets = select_cleanup_targets(processes, self, ::getuid(), {});
  EXPECT_NE(std::find(targets.begin(), targets.end(), ::getpid()), targets.end());
}

}  // namespace
}  // namespace tnt::cli
