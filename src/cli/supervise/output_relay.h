// Copies one output stream of a rank's program (its stdout or stderr pipe)
// to the wrapper's console stream and, with --output-filename, to a file.
//
// The two sinks see different text on purpose: the console gets what it
// always got (rank 0's stdout as is, "[R] "-prefixed whole lines with
// --output-on-all-devices, nothing for other ranks' stdout), while the file
// gets every byte exactly as the program wrote it, tee-style like Horovod's
// MultiFile, so the files read the same whatever the console showed.
#pragma once

#include <memory>
#include <string>

#include "supervise/console_filter.h"
#include "supervise/output_files.h"

namespace tnt::cli {

/// Where one stream goes besides the file.
struct ConsoleSink {
  int fd = -1;  ///< STDOUT_FILENO / STDERR_FILENO; -1: not shown
  /// Set: what the console shows is this filter's output (e.g. a
  /// LinePrefixer writes whole lines, each with "[2] "); null: the stream as is.
  std::shared_ptr<ConsoleFilter> filter;
};

/// Example:
///   OutputRelay out(child.stdout_fd,
///                   ConsoleSink{STDOUT_FILENO, std::make_shared<LinePrefixer>("[1] ")},
///                   std::move(file));
///   while (out.is_open()) { poll(out.fd()); out.relay_once(); }
///   out.finish();
class OutputRelay {
 public:
  /// Takes ownership of `read_fd`; `file` may be null.
  OutputRelay(int read_fd, ConsoleSink console, std::unique_ptr<OutputFile> file);
  ~OutputRelay();
  OutputRelay(OutputRelay&&) noexcept;
  OutputRelay& operator=(OutputRelay&&) = delete;
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  /// The pipe to poll(); -1 once it reached EOF.
  int fd() const noexcept { return read_fd_; }
  bool is_open() const noexcept { return read_fd_ >= 0; }
  /// One read(); returns false at EOF (the pipe is then closed) or when
  /// nothing is available.
  bool relay_once();
  /// Copies what is already in the pipe without waiting for EOF (the
  /// program's background children may hold it open), writes what the
  /// console filter held back and closes the pipe and the file.
  void finish();

 private:
  void close_pipe();

  int read_fd_;
  ConsoleSink console_;
  std::unique_ptr<OutputFile> file_;
};

}  // namespace tnt::cli
