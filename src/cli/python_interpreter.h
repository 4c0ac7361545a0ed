// Which interpreter runs the program on every rank, and where Python finds
// the tarantella package (the Tarantella manual, section 8.5).
//
// A program ending in ".py" runs under Python: by default the interpreter the
// Python package was built for (CMake's TNT_PYTHON_EXECUTABLE, compiled in as
// TNT_DEFAULT_PYTHON), because `python3` in PATH may be another Python, one
// without torch; without a recorded one, `python3` from PATH.
// `--python-interpreter CMD` names another interpreter or a wrapper
// (`valgrind --tool=memcheck python3`) for any program, and
// `--python-interpreter ""` runs the program itself, even a .py file.
//
// In a build tree the package sits next to the launcher
// (<build>/bin/tarantella, <build>/python/tarantella/__init__.py), so ranks
// get that folder first in PYTHONPATH and `import tarantella` works without
// installing; an installed package is where Python looks anyway.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch_options.h"
#include "program_path.h"

namespace tnt::cli {

/// The interpreter for .py programs when none is named: the one recorded at
/// build time (an absolute path), else "python3" (looked up in PATH).
std::string default_python_interpreter();

/// What runs the program on each rank.
struct InterpreterChoice {
  /// Put before the program; empty: the program runs itself.
  std::vector<std::string> words;
  /// Chosen for a .py program, not named with --python-interpreter.
  bool is_default = false;
};

/// True for a program name ending in ".py" (the name as typed, e.g. "train.py").
bool is_python_script(const std::string& program);

/// Applies the rule above to options.interpreter() and the program.
/// Example: program "train.py", no flag, default "/usr/bin/python3" ->
/// {{"/usr/bin/python3"}, true}.
InterpreterChoice choose_interpreter(const LaunchOptions& options,
                                     const std::string& default_python);

/// Checks on the launching node that the interpreter's first word can be
/// run: an executable file when it has a '/', else found in lookup's PATH.
/// Throws LauncherError naming it and the fix (--python-interpreter).
void check_interpreter(const InterpreterChoice& choice, const std::string& program,
                       const ProgramLookup& lookup);

/// `<launcher dir>/../python` when it holds tarantella/__init__.py (the
/// launcher runs from a build tree), else "".
/// Example: "/src/build/bin/tarantella" -> "/src/build/python".
std::string build_tree_python_dir(const std::string& launcher_path);

/// PYTHONPATH with `dir` first and the user's entries (if any) after it.
/// Example: ("/b/python", "/mine") -> "/b/python:/mine".
std::string prepend_python_path(const std::string& dir, const std::optional<std::string>& user);

}  // namespace tnt::cli
