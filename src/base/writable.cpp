#include "base/writable.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <tarantella/base/error.h>

namespace tnt::detail {

void check_writable_directory(const std::string& directory, const std::string& who) {
  namespace fs = std::filesystem;
  const fs::path dir = directory.empty() ? fs::path(".") : fs::path(directory);
  std::error_code ec;
  TNT_CHECK(fs::exists(dir, ec), who, " cannot write into '", dir.string(),
            "': the directory does not exist: create it or choose another path");
  TNT_CHECK(fs::is_directory(dir, ec), who, " cannot write into '", dir.string(),
            "': it is not a directory");
  const std::string probe = (dir / (".tnt-write-probe-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const int error = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  TNT_CHECK(fd >= 0, who, " cannot write into the directory '", dir.string(),
            "': ", std::strerror(error), ": choose a path that can be written");
}

namespace {

// The first part of `dir` that exists but is not a directory ("" if none):
// mkdir's ENOTDIR/EEXIST alone do not say which part is in the way.
std::string blocking_file(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  fs::path prefix;
  for (const auto& part : dir) {
    prefix /= part;
    std::error_code ec;
    const fs::file_status status = fs::status(prefix, ec);
    if (ec || !fs::exists(status)) return "";
    if (!fs::is_directory(status)) return prefix.string();
  }
  return "";
}

}  // namespace

void make_directories(const std::string& directory, const std::string& who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(directory, ec);
  const std::string file = blocking_file(directory);
  TNT_CHECK(file.empty(), who, ": cannot create the directory '", directory, "': '", file,
            "' is a file, not a directory: choose another path, or move the file away");
  TNT_CHECK(!ec, who, ": cannot create the directory '", directory, "': ", ec.message(),
            ": choose a directory on a file system this process can write to");
  // create_directories() accepts an existing path without saying what it is.
  TNT_CHECK(fs::is_directory(directory, ec), who, ": cannot create the directory '", directory,
            "': it exists and is not a directory: choose another path");
}

void check_writable_file(const std::string& path, const std::string& who) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  check_writable_directory(parent.string(), who);
}

}  // namespace tnt::detail
