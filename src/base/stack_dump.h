// Private: this process's own stack, on request, for the report of a
// collective that it did not reach in time.
//
// How it works. A StackDumper installs a handler for stack_dump_signal()
// (SIGRTMIN+4) and remembers the thread that created it: the one that runs
// the user's code (main, or Python's main thread, which imports the
// package). capture(), called on another thread, signals that thread and
// reads what the handler writes into a pipe. The handler does only
// async-signal-safe work: backtrace() (called once beforehand, so it never
// loads libgcc or allocates inside the handler) and backtrace_symbols_fd(),
// which names a frame only from the dynamic symbol table, then an end marker.
// Everything else happens outside the handler, in the reader: demangling and
// the one-line summary (summarize_stack).
//
// A Python rank registers faulthandler for the same signal and the pipe's
// write end, chained to this handler (python/tarantella/_stack_dump.py), so
// its dump is the Python stacks of all its threads, then the C++ stack of the
// interrupted thread, then the marker; the summary takes the Python one.
//
// The data pipeline's threads (prefetch, map workers) mark themselves with a
// ThreadRole. capture() then also takes the stack of each one that is busy,
// on a second signal (SIGRTMIN+5) that only this handler takes, so that a
// rank waiting for its next batch is reported with the code its pipeline is
// in (a Python map function: from the main dump's block for that thread).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tnt::detail {

/// The signal a stack is dumped on: SIGRTMIN+4 (a real-time signal, so that
/// a program's own SIGUSR1/SIGUSR2 handlers are left alone).
int stack_dump_signal();
/// The write end of the alive StackDumper's pipe, -1 if there is none: where
/// another dumper of the same signal (Python's faulthandler) writes.
int stack_dump_fd();
/// The signal a data pipeline thread's stack is dumped on: SIGRTMIN+5.
int thread_dump_signal();
/// Written last by the handler: the dump is complete.
inline constexpr char kStackDumpEnd[] = "-- end of stack dump --\n";

/// Marks the calling thread, while alive, as a named helper of the runtime
/// (a data pipeline thread). A stack capture names it while it is busy.
/// Example, in a worker's loop:
///   ThreadRole role("data pipeline worker 2");
///   for (...) { wait_for_work(); ThreadRole::Busy busy(role); run(work); }
class ThreadRole {
 public:
  explicit ThreadRole(std::string name);
  ~ThreadRole();
  ThreadRole(const ThreadRole&) = delete;
  ThreadRole& operator=(const ThreadRole&) = delete;

  /// Busy for its lifetime: the thread runs work (not waiting for any).
  class Busy {
   public:
    explicit Busy(ThreadRole& role);
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    ThreadRole& role_;
  };

  struct Entry;

 private:
  Entry* entry_;
};

/// While alive, stack_dump_signal() dumps the creating thread's stack.
/// One at a time per process. Example:
///   StackDumper dumper;                         // on the main thread
///   auto dump = dumper.capture(1.0);            // on another thread
///   if (dump.complete) log(summarize_stack(dump.text));
class StackDumper {
 public:
  StackDumper();
  ~StackDumper();
  StackDumper(const StackDumper&) = delete;
  StackDumper& operator=(const StackDumper&) = delete;

  /// A busy data pipeline thread's C++ stack.
  struct ThreadDump {
    std::string name;       ///< its ThreadRole's
    unsigned long id = 0;   ///< pthread_self(): Python's thread ident
    std::string text;
    bool complete = false;
  };
  struct Dump {
    std::string text;
    bool complete = false;  ///< the end marker arrived: every handler ran
    std::vector<ThreadDump> threads;  ///< the busy ThreadRoles', in order of start
  };
  /// Signals the creating thread, then each busy ThreadRole's, and returns
  /// what the handlers wrote within `seconds` in all. Not from the creating
  /// thread itself. Thread-safe.
  Dump capture(double seconds);
  /// Whether the handler is installed (false where the program had its own
  /// handler for the signal, which is left in place).
  bool installed() const { return installed_; }

 private:
  /// Signals `thread` with `signal` and reads one dump until the marker.
  bool take(pthread_t thread, int signal, std::chrono::steady_clock::time_point deadline,
            std::string& text);

  int read_fd_ = -1;
  int write_fd_ = -1;
  pthread_t target_;
  struct sigaction previous_ {};
  struct sigaction previous_thread_ {};
  bool installed_ = false;
  bool threads_installed_ = false;
  std::mutex mutex_;
};

/// A C++ symbol or type name as written in the source ("stuck()" for
/// "_Z5stuckv"); `name` itself when it is not a mangled name.
std::string demangle(const char* name);

/// The dump with names for C++ frames that backtrace_symbols could not name
/// ("prog(+0x2360)" becomes "prog(_Z18stuck_in_user_codev+0x48)"), read from
/// the modules' .symtab (elf_symbols.h): a program's own functions, without
/// -rdynamic, where the program is not stripped. Not in a signal handler.
std::string symbolize_dump(const std::string& dump);

/// Line `line` (from 1) of the text file `path`, without its line break;
/// nullopt if it cannot be read.
std::optional<std::string> read_source_line(const std::string& path, int line);
using SourceLineReader = std::function<std::optional<std::string>(const std::string&, int)>;

/// One line saying where a dump's thread is, innermost call first:
///   Python (faulthandler's "Current thread"):
///     "stuck.py line 10 (time.sleep) ← train() ← <module>"
///     (the call on that line, read from the source, in parentheses)
///   C++ (backtrace_symbols), frames of the handler left out, demangled:
///     "clock_nanosleep (libc.so.6) ← stuck_in_user_code() ← main"
///     (a frame without a dynamic symbol as "module+0xOFFSET")
/// Empty when the dump holds no frame.
std::string summarize_stack(const std::string& dump,
                            const SourceLineReader& source = read_source_line);

/// The same for a data pipeline thread: its Python frames from `main_dump`'s
/// block for thread `id` (faulthandler's "Thread 0x..."), where it runs
/// Python, else its own C++ stack `thread_dump`.
std::string summarize_thread(const std::string& main_dump, unsigned long id,
                             const std::string& thread_dump,
                             const SourceLineReader& source = read_source_line);

}  // namespace tnt::detail
