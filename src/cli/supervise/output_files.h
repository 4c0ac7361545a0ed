// --output-filename DIR: a copy of every rank's output in files.
//
// The layout is Horovod's (horovodrun and mpirun use the same flag name):
// DIR/rank.N/stdout and DIR/rank.N/stderr hold rank N's complete,
// unprefixed output, whatever the console shows. The launcher creates DIR
// and proves it writable before mpirun starts (prepare_output_directory), so
// a typo fails at once; each rank's wrapper creates its own rank.N folder,
// since DIR may be on a file system that only some hosts share.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tnt::cli {

/// "DIR/rank.N". Example: `rank_output_directory("/logs", 3)` -> "/logs/rank.3".
std::string rank_output_directory(const std::string& dir, int rank);

/// mkdir -p `dir`; nullopt on success, else what went wrong, naming the path
/// ("cannot create directory /a/f/logs: Not a directory").
std::optional<std::string> make_directories(const std::string& dir);

/// make_directories(dir), then creates and removes a probe file in it, so
/// that a read-only or full directory is found before any rank starts.
std::optional<std::string> prepare_output_directory(const std::string& dir);

/// One stream of a rank copied into a file (created or truncated, like
/// Horovod's). Writes are checked: the first failure is reported once on
/// stderr, naming `who` and the file, and later writes are dropped, so a
/// full disk never stops the training or floods the console.
/// Example: `OutputFile f("/logs/rank.1/stdout", "rank 1 on host n1"); f.write("x\n");`
class OutputFile {
 public:
  /// Opens `path`; throws std::runtime_error "cannot create PATH: reason".
  OutputFile(std::string path, std::string who);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view data);
  /// Closes the file, reporting a failed close (NFS may only report a full
  /// disk then) like a failed write. Called by the destructor if need be.
  void close();

  const std::string& path() const noexcept { return path_; }
  /// Whether a write or close failed (and was reported).
  bool failed() const noexcept { return failed_; }

 private:
  void report(int error_number);

  std::string path_;
  std::string who_;
  int fd_ = -1;
  bool failed_ = false;
};

}  // namespace tnt::cli
