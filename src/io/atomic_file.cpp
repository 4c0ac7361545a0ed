#include "io/atomic_file.h"

#include <cstdio>

#include <unistd.h>

#include <fmt/format.h>

#include <tarantella/base/error.h>

namespace tnt {

void write_atomically(const std::string& path, const std::vector<char>& bytes) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  TNT_CHECK(out != nullptr, "cannot write '", tmp,
            "': check that the directory exists and is writable");
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size() &&
                       std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
  const bool closed = std::fclose(out) == 0;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    TNT_CHECK(false, "writing '", tmp, "' failed (disk full?)");
  }
  // The data is on disk before the rename: a crash leaves the old file or
  // the new one, never a half-written one under `path`.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    TNT_CHECK(false, "cannot rename '", tmp, "' to '", path, "'");
  }
}

}  // namespace tnt
