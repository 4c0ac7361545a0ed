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
#pragma once

#include <pthread.h>
#include <signal.h>

#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace tnt::detail {

/// The signal a stack is dumped on: SIGRTMIN+4 (a real-time signal, so that
/// a program's own SIGUSR1/SIGUSR2 handlers are left alone).
int stack_dump_signal();
/// The write end of the alive StackDumper's pipe, -1 if there is none: where
/// another dumper of the same signal (Python's faulthandler) writes.
int stack_dump_fd();
/// Written last by the handler: the dump is complete.
inline constexpr char kStackDumpEnd[] = "-- end of stack dump --\n";

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

  struct Dump {
    std::string text;
    bool complete = false;  ///< the end marker arrived: every handler ran
  };
  /// Signals the creating thread and returns what the handlers wrote within
  /// `seconds`. Not from the creating thread itself. Thread-safe.
  Dump capture(double seconds);
  /// Whether the handler is installed (false where the program had its own
  /// handler for the signal, which is left in place).
  bool installed() const { return installed_; }

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  pthread_t target_;
  struct sigaction previous_ {};
  bool installed_ = false;
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

}  // namespace tnt::detail
