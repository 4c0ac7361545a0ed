// Checks, at the start of a run, that an output path can be written, so a
// typo or a read-only directory is found before hours of training instead of
// when the first file is due.
#pragma once

#include <string>

namespace tnt::detail {

/// Creates and removes a probe file in `directory` ("": the working
/// directory), which must exist. Throws tnt::Error naming `who`, the
/// directory and the reason otherwise. Example:
///   check_writable_directory("ckpt", "ModelCheckpoint");
void check_writable_directory(const std::string& directory, const std::string& who);

/// The same for the directory that `path` will be written in; the file
/// itself is left untouched.
void check_writable_file(const std::string& path, const std::string& who);

/// Creates `directory` and its missing parents; an existing directory is
/// fine. Otherwise throws tnt::Error naming `who`, the path, the reason (the
/// OS's, or which part of the path is a file) and the fix: never
/// std::filesystem_error, whose C++ type name would reach the user's log.
/// Example:
///   make_directories("ckpt/run1", "ModelCheckpoint");
void make_directories(const std::string& directory, const std::string& who);

}  // namespace tnt::detail
