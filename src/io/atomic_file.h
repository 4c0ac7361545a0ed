// Private: files are written to a temporary name in the same directory,
// flushed to disk, then renamed into place, so a crash leaves the old file
// or the new one, never a half-written one. Every writer of the library
// (weights, checkpoints, timeline, auto-tuning log) goes through here.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tnt {

/// Writes `bytes` to `path` through a temporary file and a rename; errors
/// (unwritable directory, full disk) are a tnt::Error naming the file.
void write_atomically(const std::string& path, const std::vector<char>& bytes);

/// Where a writer puts its bytes, piece by piece.
using ByteSink = std::function<void(const char* data, std::size_t size)>;

/// The same, for a file produced piece by piece: `produce` hands its bytes
/// to the sink as it makes them, so a large file (a checkpoint) is never
/// held in memory whole. If `produce` throws, the temporary file is removed
/// and `path` is left as it was.
void write_atomically(const std::string& path, const std::function<void(const ByteSink&)>& produce);

}  // namespace tnt
