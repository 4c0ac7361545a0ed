// Turning the program the user typed into an absolute path.
//
// Ranks may start in another directory or on another host with another PATH,
// so mpirun gets an absolute path that was checked on the launching node.
#pragma once

#include <string>

namespace tnt::cli {

/// Where and how to look a program up.
struct ProgramLookup {
  std::string path_variable;  ///< the value of $PATH
  std::string current_dir;    ///< absolute; relative programs are made absolute against it
  /// Set when an interpreter runs the program (a script): the program need not
  /// be executable, and a bare name is found in the current directory first,
  /// as `python3 train.py` would.
  bool for_interpreter = false;
};

/// The lookup for this process: $PATH and getcwd().
ProgramLookup current_program_lookup(bool for_interpreter);

/// Returns the absolute path of `program`: a name without '/' is searched in
/// PATH, a relative path is joined to current_dir (not resolving symlinks, so
/// the program still sees the name it was started under). Throws
/// LauncherError "program X not found ..." when it does not exist, or is not
/// executable when no interpreter is used.
/// Example: `resolve_program("sh", lookup)` -> "/usr/bin/sh".
std::string resolve_program(const std::string& program, const ProgramLookup& lookup);

/// The first `<dir>/<name>` over the ':'-separated `path_variable` that is a
/// regular file (and executable when need_executable), else "". An empty
/// entry means the current directory, as in execvp.
std::string search_path(const std::string& name, const std::string& path_variable,
                        bool need_executable);

/// True when `path` is a regular file (and executable when need_executable).
bool is_usable_file(const std::string& path, bool need_executable);

/// `path` made absolute against `current_dir` (itself absolute) and
/// normalized, without touching the file system: a file the program will
/// create may not exist yet. Example: `absolute_path("out/t.json", "/home/me")`
/// -> "/home/me/out/t.json".
std::string absolute_path(const std::string& path, const std::string& current_dir);

/// realpath(3) of `path`, or "" when it does not exist.
std::string real_path(const std::string& path);

/// Removes "." and empty segments from an absolute path ("/a/./b//c" -> "/a/b/c");
/// ".." is kept because it may cross a symlink.
std::string normalize_absolute(const std::string& path);

}  // namespace tnt::cli
