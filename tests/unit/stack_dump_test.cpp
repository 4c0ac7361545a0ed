// The one-line summary of a rank's stack dump (base/stack_dump.h), on dumps
// as faulthandler and backtrace_symbols_fd write them, and a real capture of
// this process's main thread.
#include "base/stack_dump.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "base/elf_symbols.h"

namespace {

using tnt::detail::summarize_stack;
using tnt::detail::summarize_thread;

std::optional<std::string> sleep_source(const std::string& path, int line) {
  if (path == "/home/u/stuck.py" && line == 10) return std::string("    time.sleep(600)  # wait");
  return std::nullopt;
}

const char kPythonDump[] =
    "Thread 0x00007f0000000002 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "\n"
    "Current thread 0x00007f0000000001 (most recent call first):\n"
    "  File \"/home/u/stuck.py\", line 10 in train\n"
    "  File \"/home/u/stuck.py\", line 14 in <module>\n"
    "C++ stack (innermost call first):\n"
    "/lib/libtarantella.so.0.1(tnt_stack_dump_handler+0x40)[0x7f6961dd0060]\n"
    "/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f695a65a050]\n"
    "/usr/bin/python3.11(+0x1234)[0x7f695a65a050]\n";

TEST(StackSummary, PythonCurrentThreadWithTheCallOnItsLine) {
  EXPECT_EQ(summarize_stack(kPythonDump, sleep_source),
            "stuck.py line 10 (time.sleep) \u2190 train() \u2190 <module>");
}

TEST(StackSummary, PythonWithoutSourceLeavesOutTheCall) {
  EXPECT_EQ(summarize_stack(kPythonDump,
                            [](const std::string&, int) { return std::optional<std::string>(); }),
            "stuck.py line 10 \u2190 train() \u2190 <module>");
}

TEST(StackSummary, CxxFramesAfterTheHandlerDemangled) {
  const std::string dump =
      "C++ stack (innermost call first):\n"
      "/b/libtarantella.so.0.1(tnt_stack_dump_handler+0x40)[0x7f6961dd0060]\n"
      "/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f695a65a050]\n"
      "/lib/x86_64-linux-gnu/libc.so.6(clock_nanosleep+0x65)[0x7f695a6ed545]\n"
      "/b/stuck_rank(_Z18stuck_in_user_codev+0x48)[0x5644ad4925d8]\n"
      "/b/stuck_rank(+0x2360)[0x5644ad492360]\n"
      "/b/stuck_rank(main+0xd0)[0x5644ad492360]\n"
      "/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x85)[0x7f695a645305]\n";
  EXPECT_EQ(summarize_stack(dump),
            "clock_nanosleep (libc.so.6) \u2190 stuck_in_user_code() \u2190 stuck_rank+0x2360 "
            "\u2190 main");
}

TEST(StackSummary, NoFramesNoSummary) {
  EXPECT_EQ(summarize_stack(""), "");
  EXPECT_EQ(summarize_stack("C++ stack (innermost call first):\n"), "");
}

// The dumper signals the thread that created it; here that thread waits in
// a function of this test, and another thread takes its stack.
TEST(StackDumper, CapturesTheCreatingThread) {
  std::promise<void> release;
  std::promise<std::string> summary;
  std::thread waiter([&] {
    tnt::detail::StackDumper dumper;
    ASSERT_TRUE(dumper.installed());
    std::thread asker([&] {
      const auto dump = dumper.capture(5.0);
      summary.set_value(dump.complete ? summarize_stack(dump.text) : "incomplete: " + dump.text);
      release.set_value();
    });
    release.get_future().wait();
    asker.join();
  });
  const std::string text = summary.get_future().get();
  waiter.join();
  EXPECT_NE(text.find("\u2190"), std::string::npos) << text;
  EXPECT_EQ(text.find("incomplete"), std::string::npos) << text;
  EXPECT_EQ(text.find("tnt_stack_dump_handler"), std::string::npos) << text;
}

// A data pipeline thread that runs a Python map function: its frames come
// from the main dump's block for its thread ident.
TEST(StackSummary, ThreadByItsIdentFromThePythonDump) {
  const std::string mine = summarize_thread(kPythonDump, 0x00007f0000000002UL, "", sleep_source);
  EXPECT_EQ(mine, "threading.py line 320 \u2190 wait()");
  // A thread without Python frames: its own C++ stack.
  const std::string cxx =
      "C++ stack (innermost call first):\n"
      "/b/libtarantella.so.0.1(tnt_stack_dump_handler+0x40)[0x7f6961dd0060]\n"
      "/lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7f695a65a050]\n"
      "/b/prog(_Z8slow_mapv+0x48)[0x5644ad4925d8]\n";
  EXPECT_EQ(summarize_thread(kPythonDump, 0x1234UL, cxx, sleep_source), "slow_map() (prog)");
}

__attribute__((noinline)) void busy_in_pipeline_work(std::future<void> done) {
  done.wait();
  asm volatile("");  // not a tail call: this frame stays on the stack
}

// A capture takes the stacks of the busy ThreadRoles besides the creating
// thread's, by name, and leaves the idle ones out.
TEST(StackDumper, CapturesTheBusyDataPipelineThreads) {
  std::promise<void> release;
  std::promise<void> busy_ready, idle_ready;
  std::promise<tnt::detail::StackDumper::Dump> result;
  std::thread busy([&] {
    tnt::detail::ThreadRole role("map worker 1");
    tnt::detail::ThreadRole::Busy working(role);
    busy_ready.set_value();
    busy_in_pipeline_work(release.get_future());
  });
  std::promise<void> release_idle;
  std::thread idle([&] {
    tnt::detail::ThreadRole role("map worker 2");
    idle_ready.set_value();
    release_idle.get_future().wait();
  });
  busy_ready.get_future().wait();
  idle_ready.get_future().wait();
  std::thread waiter([&] {
    tnt::detail::StackDumper dumper;
    ASSERT_TRUE(dumper.installed());
    std::thread asker([&] { result.set_value(dumper.capture(5.0)); });
    asker.join();
  });
  const auto dump = result.get_future().get();
  waiter.join();
  release.set_value();
  release_idle.set_value();
  busy.join();
  idle.join();
  EXPECT_TRUE(dump.complete);
  ASSERT_EQ(dump.threads.size(), 1u);
  EXPECT_EQ(dump.threads[0].name, "map worker 1");
  ASSERT_TRUE(dump.threads[0].complete);
  const std::string where = summarize_thread(dump.text, dump.threads[0].id,
                                             tnt::detail::symbolize_dump(dump.threads[0].text));
  EXPECT_NE(where.find("busy_in_pipeline_work"), std::string::npos) << where;
}

// Not inlined, and not in the dynamic symbol table (unit_tests is not linked
// with -rdynamic): only .symtab names it.
__attribute__((noinline)) int function_only_symtab_names(int x) { return x * 3 + 1; }

TEST(ElfSymbols, NamesAFunctionOfThisProgramWithoutDynamicSymbols) {
  Dl_info info{};
  void* address = reinterpret_cast<void*>(&function_only_symtab_names);
  ASSERT_NE(dladdr(address, &info), 0);
  const auto offset = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address) -
                                                 reinterpret_cast<std::uintptr_t>(info.dli_fbase));
  const auto symbol = tnt::detail::elf_symbol_at("/proc/self/exe", offset + 2);
  ASSERT_TRUE(symbol.has_value());
  EXPECT_NE(symbol->name.find("function_only_symtab_names"), std::string::npos) << symbol->name;
  EXPECT_EQ(symbol->offset, 2u);
  char line[128];
  std::snprintf(line, sizeof(line), "/proc/self/exe(+0x%llx)[0x1]\n",
                static_cast<unsigned long long>(offset));
  const std::string named = tnt::detail::symbolize_dump(line);
  EXPECT_NE(named.find("function_only_symtab_names"), std::string::npos) << named;
  EXPECT_NE(named.find("+0x0)[0x1]"), std::string::npos) << named;
  EXPECT_FALSE(tnt::detail::elf_symbol_at("/nonexistent", 0).has_value());
}

}  // namespace
