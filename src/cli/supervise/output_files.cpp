// Per-rank output files; see output_files.h.
#include "supervise/output_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <system_error>

namespace tnt::cli {

std::string rank_output_directory(const std::string& dir, int rank) {
  return dir + "/rank." + std::to_string(rank);
}

std::optional<std::string> make_directories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return "cannot create directory " + dir + ": " + error.message();
  // create_directories() accepts an existing path without saying what it is.
  if (!std::filesystem::is_directory(dir, error)) {
    return "cannot create directory " + dir + ": it exists and is not a directory";
  }
  return std::nullopt;
}

std::optional<std::string> prepare_output_directory(const std::string& dir) {
  if (auto problem = make_directories(dir)) return problem;
  std::string probe = dir + "/.tarantella-probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return "cannot write in directory " + dir + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

OutputFile::OutputFile(std::string path, std::string who)
    : path_(std::move(path)), who_(std::move(who)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create " + path_ + ": " + std::strerror(errno));
}

OutputFile::~OutputFile() { close(); }

void OutputFile::write(std::string_view data) {
  while (!failed_ && !data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      report(n < 0 ? errno : ENOSPC);  // a zero-byte write of a non-empty buffer: no room
      return;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void OutputFile::close() {
  if (fd_ < 0) return;
  // Linux closes the descriptor even when close() fails, so no retry.
  if (::close(fd_) != 0 && errno != EINTR) report(errno);
  fd_ = -1;
}

void OutputFile::report(int error_number) {
  if (failed_) return;
  failed_ = true;
  std::cerr << "tarantella: " << who_ << ": cannot write " << path_ << ": "
            << std::strerror(error_number) << " (--output-filename; the rest of this output is "
            << "not saved in the file, the console is unaffected)" << std::endl;
}

}  // namespace tnt::cli
