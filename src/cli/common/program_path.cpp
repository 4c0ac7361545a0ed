// Program lookup; see program_path.h.
#include "common/program_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <sstream>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

bool is_regular_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string join(const std::string& dir, const std::string& name) {
  return normalize_absolute(dir + "/" + name);
}

[[noreturn]] void not_found(const std::string& program, const std::string& where,
                            const std::string& fix) {
  throw LauncherError("program " + program + " not found" + where + ": " + fix);
}

std::string resolve_bare_name(const std::string& program, const ProgramLookup& lookup) {
  if (lookup.for_interpreter) {
    const std::string here = join(lookup.current_dir, program);
    if (is_usable_file(here, false)) return here;
  }
  const std::string found = search_path(program, lookup.path_variable, !lookup.for_interpreter);
  if (!found.empty()) return found;
  if (lookup.for_interpreter) {  // a script: most likely a typo or another directory
    not_found(program, " (looked for " + join(lookup.current_dir, program) + " and in PATH)",
              "check the spelling, or give the script's path, e.g. path/to/" + program);
  }
  not_found(program, " in PATH",
            "check the spelling, or give its path, e.g. ./" + program + " for one here");
}

}  // namespace

bool is_usable_file(const std::string& path, bool need_executable) {
  return is_regular_file(path) && (!need_executable || ::access(path.c_str(), X_OK) == 0);
}

ProgramLookup current_program_lookup(bool for_interpreter) {
  ProgramLookup lookup;
  const char* path = std::getenv("PATH");
  lookup.path_variable = path ? path : "";
  char cwd[PATH_MAX];
  lookup.current_dir = ::getcwd(cwd, sizeof(cwd)) ? cwd : "/";
  lookup.for_interpreter = for_interpreter;
  return lookup;
}

std::string normalize_absolute(const std::string& path) {
  std::istringstream in(path);
  std::string segment;
  std::string result;
  while (std::getline(in, segment, '/')) {
    if (segment.empty() || segment == ".") continue;
    result += "/" + segment;
  }
  return result.empty() ? "/" : result;
}

std::string search_path(const std::string& name, const std::string& path_variable,
                        bool need_executable) {
  std::size_t start = 0;
  while (start <= path_variable.size()) {
    auto end = path_variable.find(':', start);
    if (end == std::string::npos) end = path_variable.size();
    std::string dir = path_variable.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (is_usable_file(candidate, need_executable)) {
      if (candidate[0] != '/') {
        const auto lookup = current_program_lookup(false);
        candidate = join(lookup.current_dir, candidate);
      }
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

std::string resolve_program(const std::string& program, const ProgramLookup& lookup) {
  if (program.empty()) throw LauncherError("the program name after '--' is empty");
  if (program.find('/') == std::string::npos) return resolve_bare_name(program, lookup);
  const std::string absolute =
      program[0] == '/' ? normalize_absolute(program) : join(lookup.current_dir, program);
  if (!is_regular_file(absolute)) {
    not_found(program, " (looked for " + absolute + ")", "check the path");
  }
  if (!lookup.for_interpreter && ::access(absolute.c_str(), X_OK) != 0) {
    throw LauncherError("program " + program + " is not executable: run chmod +x " + absolute +
                        ", or name its interpreter with --python-interpreter");
  }
  return absolute;
}

std::string absolute_path(const std::string& path, const std::string& current_dir) {
  return path.size() > 0 && path[0] == '/' ? normalize_absolute(path) : join(current_dir, path);
}

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) ? std::string(buffer) : std::string();
}

}  // namespace tnt::cli
