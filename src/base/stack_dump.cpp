// A process's own stack on request (see stack_dump.h).
#include "base/stack_dump.h"

#include <cxxabi.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <vector>

#include "base/elf_symbols.h"

namespace tnt::detail {
namespace {

std::atomic<int> g_dump_fd{-1};

void write_text(int fd, const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(fd, text, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full pipe (non-blocking): the rest is lost, never a hang
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

// Not static, so that backtrace_symbols names it and the summary can leave
// out the frames up to it.
extern "C" void tnt_stack_dump_handler(int) {
  const int saved_errno = errno;
  const int fd = g_dump_fd.load();
  if (fd >= 0) {
    write_text(fd, "C++ stack (innermost call first):\n");
    void* frames[64];
    const int count = ::backtrace(frames, 64);
    ::backtrace_symbols_fd(frames, count, fd);
    write_text(fd, kStackDumpEnd);
  }
  errno = saved_errno;
}

int stack_dump_signal() { return SIGRTMIN + 4; }
int thread_dump_signal() { return SIGRTMIN + 5; }
int stack_dump_fd() { return g_dump_fd.load(); }

struct ThreadRole::Entry {
  pthread_t thread;
  std::string name;
  std::atomic<bool> busy{false};
};

namespace {

std::mutex& roles_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Alive ThreadRoles, in order of start.
std::vector<ThreadRole::Entry*>& roles() {
  static std::vector<ThreadRole::Entry*> entries;
  return entries;
}

// Installs the handler for `signal` unless the program has one of its own.
bool install_handler(int signal, struct sigaction& previous) {
  struct sigaction current {};
  ::sigaction(signal, nullptr, &current);
  if (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN) return false;
  struct sigaction action {};
  action.sa_handler = &tnt_stack_dump_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  return ::sigaction(signal, &action, &previous) == 0;
}

}  // namespace

ThreadRole::ThreadRole(std::string name)
    : entry_(new Entry{::pthread_self(), std::move(name)}) {
  std::lock_guard<std::mutex> lock(roles_mutex());
  roles().push_back(entry_);
}

ThreadRole::~ThreadRole() {
  {
    std::lock_guard<std::mutex> lock(roles_mutex());
    auto& all = roles();
    all.erase(std::remove(all.begin(), all.end(), entry_), all.end());
  }
  delete entry_;
}

ThreadRole::Busy::Busy(ThreadRole& role) : role_(role) { role_.entry_->busy.store(true); }
ThreadRole::Busy::~Busy() { role_.entry_->busy.store(false); }

StackDumper::StackDumper() : target_(::pthread_self()) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  void* prime[2];
  ::backtrace(prime, 2);  // loads libgcc's unwinder now, not in the handler
  g_dump_fd.store(write_fd_);
  installed_ = install_handler(stack_dump_signal(), previous_);
  if (!installed_) {
    g_dump_fd.store(-1);
    return;
  }
  threads_installed_ = install_handler(thread_dump_signal(), previous_thread_);
}

StackDumper::~StackDumper() {
  if (threads_installed_) ::sigaction(thread_dump_signal(), &previous_thread_, nullptr);
  if (installed_) {
    ::sigaction(stack_dump_signal(), &previous_, nullptr);
    g_dump_fd.store(-1);
  }
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

StackDumper::Dump StackDumper::capture(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  Dump dump;
  if (!installed_) return dump;
  char buffer[4096];
  while (::read(read_fd_, buffer, sizeof(buffer)) > 0) {
  }  // what an earlier, stray signal left
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(seconds));
  dump.complete = take(target_, stack_dump_signal(), deadline, dump.text);
  if (!dump.complete || !threads_installed_) return dump;
  // Holding the registry keeps each thread alive until its handler ran: a
  // ThreadRole's destructor waits for it.
  std::lock_guard<std::mutex> roles_lock(roles_mutex());
  for (const ThreadRole::Entry* role : roles()) {
    if (!role->busy.load() || ::pthread_equal(role->thread, target_)) continue;
    ThreadDump thread;
    thread.name = role->name;
    thread.id = static_cast<unsigned long>(role->thread);
    thread.complete = take(role->thread, thread_dump_signal(), deadline, thread.text);
    const bool complete = thread.complete;
    dump.threads.push_back(std::move(thread));
    if (!complete) break;  // a late dump would mix with the next one's
  }
  return dump;
}

bool StackDumper::take(pthread_t thread, int signal,
                       std::chrono::steady_clock::time_point deadline, std::string& text) {
  if (::pthread_kill(thread, signal) != 0) return false;
  char buffer[4096];
  while (text.find(kStackDumpEnd) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fd{read_fd_, POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::read(read_fd_, buffer, sizeof(buffer));
    if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
  }
  text.erase(text.find(kStackDumpEnd));
  return true;
}

std::string demangle(const char* name) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> readable(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(name);
}

std::string symbolize_dump(const std::string& dump) {
  static const std::regex unnamed(R"(^(.*)\(\+0x([0-9a-fA-F]+)\)( ?\[0x[0-9a-fA-F]+\])$)");
  std::istringstream in(dump);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, unnamed)) {
      const std::uint64_t offset = std::stoull(m[2].str(), nullptr, 16);
      if (const auto symbol = elf_symbol_at(m[1].str(), offset)) {
        char relative[32];
        std::snprintf(relative, sizeof(relative), "+0x%llx",
                      static_cast<unsigned long long>(symbol->offset));
        line = m[1].str() + "(" + symbol->name + relative + ")" + m[3].str();
      }
    }
    out += line + "\n";
  }
  return out;
}

std::optional<std::string> read_source_line(const std::string& path, int line) {
  std::ifstream in(path);
  std::string text;
  for (int i = 1; i <= line && std::getline(in, text); ++i) {
    if (i == line) return text;
  }
  return std::nullopt;
}

namespace {

constexpr std::size_t kMaxFrames = 8;
constexpr char kArrow[] = " \u2190 ";  // " ← "

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string demangled(const std::string& name) {
  std::string out = demangle(name.c_str());
  if (out.size() > 120) out = out.substr(0, 117) + "...";
  return out;
}

// The first call on a line of Python ("time.sleep" in "  time.sleep(60)"),
// skipping keywords that take parentheses.
std::optional<std::string> called_on(const std::string& source) {
  static const std::regex call(R"(([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\()");
  static const char* const keywords[] = {"if",    "elif", "while",  "for",    "return", "and",
                                         "or",    "not",  "in",     "assert", "with",   "yield",
                                         "await", "del",  "lambda", "is",     "else",   "except"};
  for (auto it = std::sregex_iterator(source.begin(), source.end(), call);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    bool keyword = false;
    for (const char* k : keywords) keyword = keyword || name == k;
    if (!keyword) return name;
  }
  return std::nullopt;
}

struct PyFrame {
  std::string file;
  int line = 0;
  std::string function;
};

// The frames of faulthandler's block for the current thread (the one that
// was signalled), else of its first block.
std::vector<PyFrame> python_frames(const std::vector<std::string>& lines) {
  static const std::regex frame(R"re(^\s+File "(.*)", line (\d+) in (.*)$)re");
  std::vector<PyFrame> first, current;
  std::vector<PyFrame>* into = nullptr;
  for (const auto& line : lines) {
    std::smatch m;
    if (line.rfind("Current thread ", 0) == 0) {
      into = &current;
    } else if (line.rfind("Thread ", 0) == 0 || line.rfind("Stack (", 0) == 0) {
      into = first.empty() ? &first : nullptr;
    } else if (into != nullptr && std::regex_match(line, m, frame)) {
      into->push_back(PyFrame{m[1], std::stoi(m[2]), m[3]});
    } else if (line.rfind("C++ stack", 0) == 0) {
      into = nullptr;
    }
  }
  return current.empty() ? first : current;
}

// The frames of faulthandler's block for thread `id` ("Thread 0x..." or
// "Current thread 0x...", the ident in 16 hex digits).
std::vector<PyFrame> python_frames_of(const std::vector<std::string>& lines, unsigned long id) {
  static const std::regex frame(R"re(^\s+File "(.*)", line (\d+) in (.*)$)re");
  char ident[32];
  std::snprintf(ident, sizeof(ident), "hread 0x%016lx ", id);
  std::vector<PyFrame> frames;
  bool in_block = false;
  for (const auto& line : lines) {
    std::smatch m;
    if (line.rfind("Thread ", 0) == 0 || line.rfind("Current thread ", 0) == 0) {
      in_block = line.find(ident) != std::string::npos;
    } else if (line.rfind("C++ stack", 0) == 0) {
      in_block = false;
    } else if (in_block && std::regex_match(line, m, frame)) {
      frames.push_back(PyFrame{m[1], std::stoi(m[2]), m[3]});
    }
  }
  return frames;
}

std::string python_summary(const std::vector<PyFrame>& frames, const SourceLineReader& source) {
  std::string out = base_name(frames[0].file) + " line " + std::to_string(frames[0].line);
  if (const auto text = source ? source(frames[0].file, frames[0].line) : std::nullopt) {
    if (const auto call = called_on(*text)) out += " (" + *call + ")";
  }
  for (std::size_t i = 0; i < frames.size() && i < kMaxFrames; ++i) {
    const std::string& f = frames[i].function;
    out += kArrow + f + (f.empty() || f[0] == '<' ? "" : "()");
  }
  if (frames.size() > kMaxFrames) out += std::string(kArrow) + "...";
  return out;
}

struct CxxFrame {
  std::string module;  ///< base name
  std::string symbol;  ///< mangled, empty if none
  std::string offset;  ///< "+0x..." within the symbol or the module
};

// backtrace_symbols_fd's "path(symbol+0x1d)[0x...]", "path(+0x1d)[0x...]"
// (backtrace_symbols puts a space before the address).
std::vector<CxxFrame> cxx_frames(const std::vector<std::string>& lines) {
  static const std::regex frame(R"(^(.*)\(([^()+]*)(\+0x[0-9a-fA-F]+)?\) ?\[0x[0-9a-fA-F]+\]$)");
  std::vector<CxxFrame> frames;
  bool in_cxx = false;
  for (const auto& line : lines) {
    if (line.rfind("C++ stack", 0) == 0) {
      in_cxx = true;
      frames.clear();
      continue;
    }
    std::smatch m;
    if (in_cxx && std::regex_match(line, m, frame)) {
      frames.push_back(CxxFrame{base_name(m[1]), m[2], m[3]});
    }
  }
  // Leave out the handler and the kernel's return trampoline (a libc frame
  // without a name) that precede the interrupted code.
  std::size_t first = 0;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].symbol == "tnt_stack_dump_handler") first = i + 1;
  }
  if (first > 0 && first < frames.size() &&
      (frames[first].symbol.empty() || frames[first].symbol == "__restore_rt") &&
      frames[first].module.rfind("libc.so", 0) == 0) {
    ++first;
  }
  return std::vector<CxxFrame>(frames.begin() + static_cast<std::ptrdiff_t>(first), frames.end());
}

std::string cxx_summary(const std::vector<CxxFrame>& frames) {
  std::string out;
  for (std::size_t i = 0; i < frames.size() && i < kMaxFrames; ++i) {
    const CxxFrame& f = frames[i];
    if (i > 0) out += kArrow;
    out += f.symbol.empty() ? f.module + f.offset : demangled(f.symbol);
    if (i == 0 && !f.symbol.empty()) out += " (" + f.module + ")";
    if (f.symbol == "main") return out;
  }
  if (frames.size() > kMaxFrames) out += std::string(kArrow) + "...";
  return out;
}

}  // namespace

std::string summarize_stack(const std::string& dump, const SourceLineReader& source) {
  std::vector<std::string> lines;
  std::istringstream in(dump);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::vector<PyFrame> py = python_frames(lines);
  if (!py.empty()) return python_summary(py, source);
  const std::vector<CxxFrame> cxx = cxx_frames(lines);
  return cxx.empty() ? std::string() : cxx_summary(cxx);
}

std::string summarize_thread(const std::string& main_dump, unsigned long id,
                             const std::string& thread_dump, const SourceLineReader& source) {
  std::vector<std::string> lines;
  std::istringstream in(main_dump);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::vector<PyFrame> py = python_frames_of(lines, id);
  if (!py.empty()) return python_summary(py, source);
  return summarize_stack(thread_dump, source);
}

}  // namespace tnt::detail
