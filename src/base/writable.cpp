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

void check_writable_file(const std::string& path, const std::string& who) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  check_writable_directory(parent.string(), who);
}

}  // namespace tnt::detail
