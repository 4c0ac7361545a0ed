// Validation of `-x VAR=VALUE` entries; see env_assignment.h.
#include "parse/env_assignment.h"

#include <cctype>
#include <cstdlib>

#include "common/launcher_error.h"

namespace tnt::cli {

bool is_valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

EnvAssignment parse_env_assignment(const std::string& entry) {
  const auto eq = entry.find('=');
  if (eq == std::string::npos) {
    // mpirun's -x NAME: this environment's value, passed on to every rank
    // (also on other hosts, whose environment is their own).
    const char* here = is_valid_env_name(entry) ? std::getenv(entry.c_str()) : nullptr;
    if (here != nullptr) return EnvAssignment{entry, here};
    throw LauncherError("-x '" + entry + "': expected VAR=VALUE, e.g. -x '" +
                        (entry.empty() ? std::string("NAME") : entry) + "=1'" +
                        (is_valid_env_name(entry)
                             ? " (-x " + entry + " alone passes on this environment's " + entry +
                                   ", which is not set)"
                             : std::string()));
  }
  EnvAssignment result{entry.substr(0, eq), entry.substr(eq + 1)};
  if (result.name.empty()) {
    throw LauncherError("-x '" + entry + "': the variable name before '=' is empty");
  }
  if (!is_valid_env_name(result.name)) {
    throw LauncherError("-x '" + entry + "': '" + result.name +
                        "' is not a valid variable name: use letters, digits and '_', "
                        "not starting with a digit");
  }
  return result;
}

std::vector<EnvAssignment> parse_env_assignments(const std::vector<std::string>& entries) {
  std::vector<EnvAssignment> result;
  result.reserve(entries.size());
  for (const auto& entry : entries) result.push_back(parse_env_assignment(entry));
  return result;
}

}  // namespace tnt::cli
