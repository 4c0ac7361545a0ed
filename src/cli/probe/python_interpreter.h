// Which interpreter runs the program on every rank, and where Python finds
// the tarantella package (the Tarantella manual, section 8.5).
//
// A program ending in ".py" runs under Python. Which one, by default
// (`python3` in PATH may be another Python, one without torch):
//   1. the launcher lies in a virtual environment's bin/ (pip install .):
//      that environment's python3, next to the launcher. A wheel may be
//      installed into any venv, so no path recorded at build time can be
//      right there;
//   2. the interpreter the Python package was built for (CMake's
//      TNT_PYTHON_EXECUTABLE, compiled in as TNT_DEFAULT_PYTHON);
//   3. `python3` from PATH.
// `--python-interpreter CMD` names another interpreter or a wrapper
// (`valgrind --tool=memcheck python3`) for any program, and
// `--python-interpreter ""` runs the program itself, even a .py file.
//
// Where Python finds the package: in a build tree it sits next to the
// launcher (<build>/bin/tarantella, <build>/python/tarantella/__init__.py);
// `cmake --install --prefix DIR` puts it in DIR/lib/python3/dist-packages
// (TNT_PYTHON_INSTALL_DIR), which only Debian's /usr searches. Either folder
// goes first in the ranks' PYTHONPATH, so `import tarantella` works from any
// prefix; a venv's site-packages needs nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/program_path.h"
#include "parse/launch_options.h"

namespace tnt::cli {

/// The interpreter for .py programs when none is named, by the rule above.
/// `recorded`: the path recorded at build time, "" for none.
/// Example: ("/venv/bin/tarantella" with /venv/pyvenv.cfg, "/usr/bin/python3")
/// -> "/venv/bin/python3".
std::string default_python_interpreter(const std::string& launcher_path,
                                       const std::string& recorded);

/// The path recorded at build time (TNT_DEFAULT_PYTHON), "" for none.
std::string recorded_python_interpreter();

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

/// TNT_PYTHON_INSTALL_DIR as configured (relative to the prefix).
std::string installed_python_subdir();

/// Where the package sits relative to the launcher: `<launcher dir>/../python`
/// (a build tree), else `<launcher dir>/../<install_dir>` (an installed
/// prefix), the first that holds tarantella/__init__.py; "" for neither.
/// Example: "/src/build/bin/tarantella" -> "/src/build/python";
/// ("/opt/x/bin/tarantella", "lib/python3/dist-packages") -> "/opt/x/lib/python3/dist-packages".
std::string python_package_dir(const std::string& launcher_path,
                               const std::string& install_dir = installed_python_subdir());

/// PYTHONPATH with `dir` first and the user's entries (if any) after it.
/// Example: ("/b/python", "/mine") -> "/b/python:/mine".
std::string prepend_python_path(const std::string& dir, const std::optional<std::string>& user);

}  // namespace tnt::cli
