// Private: files are written to a temporary name in the same directory,
// flushed to disk, then renamed into place, so a crash leaves the old file
// or the new one, never a half-written one. Every writer of the library
// (weights, checkpoints, timeline, auto-tuning log) goes through here.
#pragma once

#include <string>
#include <vector>

namespace tnt {

/// Writes `bytes` to `path` through a temporary file and a rename; errors
/// (unwritable directory, full disk) are a tnt::Error naming the file.
void write_atomically(const std::string& path, const std::vector<char>& bytes);

}  // namespace tnt
