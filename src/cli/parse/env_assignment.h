// `-x VAR=VALUE`: one environment variable exported to every rank.
#pragma once

#include <string>
#include <vector>

namespace tnt::cli {

/// A validated VAR=VALUE pair. The value is kept byte for byte: it reaches the
/// ranks through mpirun's environment, never through a shell.
/// Example: `parse_env_assignment("B=two words")` -> {"B", "two words"}.
struct EnvAssignment {
  std::string name;
  std::string value;
  bool operator==(const EnvAssignment& other) const {
    return name == other.name && value == other.value;
  }
};

/// True for names a POSIX shell accepts: [A-Za-z_][A-Za-z0-9_]*.
bool is_valid_env_name(const std::string& name);

/// Splits at the first '='. Throws LauncherError naming the entry when there
/// is no '=' or the name is empty or invalid.
EnvAssignment parse_env_assignment(const std::string& entry);

/// Parses every entry in order (order is kept: later entries win on repeats).
std::vector<EnvAssignment> parse_env_assignments(const std::vector<std::string>& entries);

}  // namespace tnt::cli
