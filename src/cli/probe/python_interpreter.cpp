// The interpreter rule and the build-tree PYTHONPATH; see python_interpreter.h.
#include "probe/python_interpreter.h"

#include "common/launcher_error.h"
#include "parse/shell_words.h"

namespace tnt::cli {
namespace {

// Like execvp: a word without '/' is searched in PATH, a path is taken as is
// (relative to the launcher's directory).
bool runnable(const std::string& command, const ProgramLookup& lookup) {
  if (command.find('/') == std::string::npos) {
    return !search_path(command, lookup.path_variable, /*need_executable=*/true).empty();
  }
  return is_usable_file(absolute_path(command, lookup.current_dir), /*need_executable=*/true);
}

std::string where_missing(const std::string& command) {
  return command.find('/') == std::string::npos ? command + " not found in PATH"
                                                : command + " is not an executable file";
}

// The default was not named by the user, so the message says where it came
// from and how to name another one.
[[noreturn]] void default_missing(const std::string& python, const std::string& program) {
  const bool recorded = python.find('/') != std::string::npos;
  const std::string what = recorded ? python +
                                          ", the Python that Tarantella was built for, is "
                                          "not an executable file"
                                    : where_missing(python);
  throw LauncherError(what + " (it runs " + program +
                      "): " + (recorded ? "reinstall it, " : "install Python 3, ") +
                      "or name an interpreter with --python-interpreter, e.g. "
                      "--python-interpreter " +
                      (recorded ? "python3" : "/usr/bin/python3") +
                      " (--python-interpreter '' runs " + program + " as a program)");
}

// "/a/b/c" -> "/a/b"; "" for a name without a folder or a file in "/".
std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "";
  return path.substr(0, slash);
}

}  // namespace

std::string recorded_python_interpreter() {
#ifdef TNT_DEFAULT_PYTHON
  return TNT_DEFAULT_PYTHON;
#else
  return "";
#endif
}

std::string installed_python_subdir() {
#ifdef TNT_PYTHON_INSTALL_SUBDIR
  return TNT_PYTHON_INSTALL_SUBDIR;
#else
  return "lib/python3/dist-packages";
#endif
}

std::string default_python_interpreter(const std::string& launcher_path,
                                       const std::string& recorded) {
  const std::string bin = parent_dir(launcher_path);
  if (!bin.empty() && is_usable_file(parent_dir(bin) + "/pyvenv.cfg", /*need_executable=*/false) &&
      is_usable_file(bin + "/python3", /*need_executable=*/true)) {
    return bin + "/python3";
  }
  return recorded.empty() ? "python3" : recorded;
}

bool is_python_script(const std::string& program) {
  const std::string suffix = ".py";
  return program.size() > suffix.size() &&
         program.compare(program.size() - suffix.size(), suffix.size(), suffix) == 0;
}

InterpreterChoice choose_interpreter(const LaunchOptions& options,
                                     const std::string& default_python) {
  if (options.interpreter()) return InterpreterChoice{*options.interpreter(), false};
  const bool python = !options.command().empty() && is_python_script(options.command().front());
  if (!python) return InterpreterChoice{};
  return InterpreterChoice{{default_python}, true};
}

void check_interpreter(const InterpreterChoice& choice, const std::string& program,
                       const ProgramLookup& lookup) {
  if (choice.words.empty() || runnable(choice.words.front(), lookup)) return;
  if (choice.is_default) default_missing(choice.words.front(), program);
  throw LauncherError("--python-interpreter " + shell_quote(shell_join(choice.words)) + ": " +
                      where_missing(choice.words.front()) +
                      ": install it, or give its full path in --python-interpreter");
}

std::string python_package_dir(const std::string& launcher_path, const std::string& install_dir) {
  // launcher_path is /proc/self/exe, already free of symlinks and "..".
  const std::string prefix = parent_dir(parent_dir(launcher_path));
  if (prefix.empty()) return "";
  for (const std::string& dir : {prefix + "/python", prefix + "/" + install_dir}) {
    if (is_usable_file(dir + "/tarantella/__init__.py", /*need_executable=*/false)) return dir;
  }
  return "";
}

std::string prepend_python_path(const std::string& dir, const std::optional<std::string>& user) {
  return user && !user->empty() ? dir + ":" + *user : dir;
}

}  // namespace tnt::cli
