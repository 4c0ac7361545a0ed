// Validation of `--mca NAME VALUE`; see mca_parameter.h.
#include "parse/mca_parameter.h"

#include <algorithm>
#include <cctype>

#include "common/launcher_error.h"

namespace tnt::cli {

McaParameter parse_mca_parameter(const std::string& name, const std::string& value) {
  const bool valid_name = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  if (!valid_name) {
    throw LauncherError("--mca '" + name + "' '" + value + "': '" + name +
                        "' is not an MCA parameter name: use letters, digits and '_', e.g. "
                        "--mca btl_tcp_if_include eth0 (see ompi_info --all)");
  }
  if (value.empty()) {
    throw LauncherError("--mca " + name + " '': the value is empty: give one, e.g. --mca " + name +
                        " 1");
  }
  return McaParameter{name, value};
}

}  // namespace tnt::cli
