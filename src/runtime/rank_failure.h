// Private to runtime.cpp: how a rank ends when an error stops it.
//
// std::terminate's default handler (an uncaught exception) calls abort():
// the job reports "killed by signal 6", OpenMPI prints a backtrace of every
// rank that failed, and the one useful line is buried among them. A rank
// that fails now prints exactly one line,
//
//   tarantella: rank 2 on host node07 failed: <message>
//
// (the form of the launcher's rank reports; the launcher shows the first
// report of the job and drops the rest), adds a backtrace only at log level
// DEBUG, and ends at once with exit status 1: _exit, neither MPI_Finalize,
// which would wait for ranks that are not coming, nor MPI_Abort, whose
// banner every failing rank repeats. mpirun sees the rank end and stops the
// others, as it does for any rank that exits non-zero.
#pragma once

#include <cxxabi.h>
#include <execinfo.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include <c10/util/Exception.h>

#include <tarantella/base/error.h>

#include "base/stack_dump.h"

namespace tnt::detail {

/// "rank R on host H", as the launcher's wrapper names ranks; rank -1: not
/// known yet (the runtime failed before MPI told it).
inline std::string rank_label(int rank) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  if (rank < 0) return "process " + std::to_string(::getpid()) + " on host " + host;
  return "rank " + std::to_string(rank) + " on host " + host;
}

/// The message without this rank's "[tarantella rank R] " prefix (or
/// "[tarantella] " before the rank is known): the report line names the
/// rank already.
inline std::string without_rank_prefix(std::string message, int rank) {
  const std::string own =
      rank < 0 ? std::string("[tarantella] ") : "[tarantella rank " + std::to_string(rank) + "] ";
  if (message.compare(0, own.size(), own) == 0) message.erase(0, own.size());
  return message;
}

/// What the exception being handled says; called from the terminate handler.
/// A tnt::Error is its message; other types are named, LibTorch's without
/// the backtrace that c10::Error carries in what().
inline std::string describe_current_exception(int rank) {
  const std::exception_ptr error = std::current_exception();
  if (!error) {
    return "std::terminate was called without an exception (for example a std::thread was "
           "destroyed while still joinable)";
  }
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return without_rank_prefix(e.what(), rank);
  } catch (const c10::Error& e) {
    return demangle(typeid(e).name()) + ": " + e.what_without_backtrace();
  } catch (const std::exception& e) {
    return demangle(typeid(e).name()) + ": " + e.what();
  } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    return "an exception of type " + (type ? demangle(type->name()) : std::string("unknown"));
  }
}

/// backtrace_symbols' "module(symbol+0x2a) [0x7f...]" as "symbol (module)",
/// demangled; frames without a symbol stay as they are.
inline std::string readable_frame(const std::string& raw) {
  const auto open = raw.find('(');
  const auto plus = raw.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return raw;
  return demangle(raw.substr(open + 1, plus - open - 1).c_str()) + " (" + raw.substr(0, open) + ")";
}

/// The calling thread's stack, innermost first, from the first frame below
/// `handler` and the C++ runtime frames under it (std::terminate,
/// __cxa_throw): for an uncaught exception, the frame that threw. No stack
/// was unwound: the C++ runtime calls std::terminate before unwinding when
/// no handler exists.
inline std::vector<std::string> backtrace_lines(const std::string& handler) {
  void* frames[64];
  const int count = ::backtrace(frames, 64);
  const std::unique_ptr<char*, void (*)(void*)> symbols(::backtrace_symbols(frames, count),
                                                        std::free);
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) lines.push_back(symbols ? readable_frame(symbols.get()[i]) : "?");
  auto first = lines.begin();
  for (auto it = lines.begin(); it != lines.end(); ++it) {
    if (it->find(handler) != std::string::npos) first = it + 1;
  }
  while (first != lines.end() && first->find("libstdc++") != std::string::npos) ++first;
  return std::vector<std::string>(first, lines.end());
}

inline void write_all_stderr(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

/// Prints the report line (and with `with_backtrace` this thread's stack)
/// and ends the process with exit status 1. What the program printed so far
/// is flushed first; nothing else runs (no destructors, no MPI calls).
[[noreturn]] inline void end_failed_rank(int rank, const std::string& message,
                                         bool with_backtrace) {
  std::cout.flush();
  std::fflush(nullptr);
  std::string text = "tarantella: " + rank_label(rank) + " failed: " + message + "\n";
  if (with_backtrace) {
    text += "[tarantella rank " + std::to_string(rank) + "] DEBUG: backtrace of rank " +
            std::to_string(rank) +
            ", innermost call first (addr2line -Cfe MODULE OFFSET names a MODULE(+OFFSET) "
            "frame):\n";
    const auto lines = backtrace_lines("FailedRankHandler::on_terminate");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      text += "  #" + std::to_string(i) + " " + lines[i] + "\n";
    }
  }
  write_all_stderr(text);
  ::_exit(1);
}

/// While alive, std::terminate (an exception nobody catches, on any thread)
/// ends this rank with end_failed_rank() instead of abort(). One at a time.
/// Installed before the rank is known, so that a start-up error (a bad
/// TNT_* value) ends the same way; identify() completes it.
class FailedRankHandler {
 public:
  FailedRankHandler() {
    rank_.store(-1);
    with_backtrace_.store(false);
    previous_ = std::set_terminate(&on_terminate);
  }
  ~FailedRankHandler() { std::set_terminate(previous_); }
  /// The rank to name, and whether to print a backtrace (log level DEBUG).
  void identify(int rank, bool with_backtrace) {
    rank_.store(rank);
    with_backtrace_.store(with_backtrace);
  }
  FailedRankHandler(const FailedRankHandler&) = delete;
  FailedRankHandler& operator=(const FailedRankHandler&) = delete;

 private:
  [[noreturn]] static void on_terminate() {
    const int rank = rank_.load();
    end_failed_rank(rank, describe_current_exception(rank), with_backtrace_.load());
  }

  static inline std::atomic<int> rank_{0};
  static inline std::atomic<bool> with_backtrace_{false};
  std::terminate_handler previous_ = nullptr;
};

}  // namespace tnt::detail
