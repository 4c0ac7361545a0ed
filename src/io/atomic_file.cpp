#include "io/atomic_file.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <tarantella/base/error.h>

namespace tnt {
namespace {

// /proc/self/mountinfo escapes blanks and backslashes in paths as \ooo.
std::string unescape_mount_path(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

struct MountOf {
  std::string point;  ///< where the file system is mounted ("" if unknown)
  std::string type;   ///< ext4, tmpfs, nfs4, ...
};

// The mount that holds `dir`: the longest mount point that is a prefix of it.
MountOf mount_of(const std::string& dir) {
  std::error_code ec;
  const std::string path = std::filesystem::weakly_canonical(dir.empty() ? "." : dir, ec).string();
  std::ifstream info("/proc/self/mountinfo");
  MountOf best;
  for (std::string line; std::getline(info, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point, word;
    fields >> id >> parent >> device >> root >> point;
    while (fields >> word && word != "-") {
    }
    std::string type;
    fields >> type;
    point = unescape_mount_path(point);
    const bool holds = path == point || point == "/" ||
                       (path.compare(0, point.size(), point) == 0 && path[point.size()] == '/');
    if (holds && point.size() >= best.point.size()) best = {point, type};
  }
  return best;
}

std::string size_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

// "No space left on device (ENOSPC) on the file system mounted at '/ckpt'
// (tmpfs, 1.0 MiB, 4.0 KiB free)": which file system is full, and how full.
std::string failure_text(int error, const std::string& dir) {
  std::string text = std::strerror(error);
  if (error != ENOSPC && error != EDQUOT) return text;
  text += error == ENOSPC ? " (ENOSPC)" : " (EDQUOT: over the disk quota)";
  const MountOf mount = mount_of(dir);
  if (mount.point.empty()) return text;
  text += fmt::format(" on the file system mounted at '{}' ({}", mount.point, mount.type);
  struct statvfs fs {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0) {
    text += fmt::format(", {}, {} free", size_text(double(fs.f_blocks) * fs.f_frsize),
                        size_text(double(fs.f_bavail) * fs.f_frsize));
  }
  return text + ")";
}

std::string fix_for(int error, const std::string& path) {
  if (error == ENOSPC || error == EDQUOT) {
    return fmt::format(
        "'{}' was not changed: free space on that file system (or raise the quota), or write "
        "to another one",
        path);
  }
  return "check that the directory exists and is writable";
}

}  // namespace

void write_atomically(const std::string& path, const std::vector<char>& bytes) {
  write_atomically(path, [&](const ByteSink& sink) { sink(bytes.data(), bytes.size()); });
}

void write_atomically(const std::string& path,
                      const std::function<void(const ByteSink&)>& produce) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const std::string dir = std::filesystem::path(path).parent_path().string();
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr) {
    const int error = errno;
    TNT_CHECK(false, "cannot write '", tmp, "': ", failure_text(error, dir), ": ",
              fix_for(error, path));
  }
  int error = 0;
  const auto note = [&](bool ok) {
    if (!ok && error == 0) error = errno ? errno : EIO;
    return ok;
  };
  errno = 0;
  // After the first failed write (a full disk) the rest is dropped: the
  // error is reported once the producer is done.
  const ByteSink sink = [&](const char* data, std::size_t size) {
    if (error == 0) note(std::fwrite(data, 1, size, out) == size);
  };
  try {
    produce(sink);
  } catch (...) {
    std::fclose(out);
    std::remove(tmp.c_str());
    throw;
  }
  const bool written =
      error == 0 && note(std::fflush(out) == 0) && note(::fsync(::fileno(out)) == 0);
  const bool closed = note(std::fclose(out) == 0);
  if (!written || !closed) {
    std::remove(tmp.c_str());
    TNT_CHECK(false, "writing '", path, "' failed (through its temporary file '", tmp,
              "', now removed): ", failure_text(error, dir), ": ", fix_for(error, path));
  }
  // The data is on disk before the rename: a crash leaves the old file or
  // the new one, never a half-written one under `path`.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    std::remove(tmp.c_str());
    TNT_CHECK(false, "cannot rename '", tmp, "' to '", path, "': ", std::strerror(rename_error),
              ": ", fix_for(rename_error, path));
  }
}

}  // namespace tnt
