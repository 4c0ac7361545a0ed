// option_defaults(name): the defaults of the options each Python class or
// function takes, read from the C++ options structs (options.h).
#include "python/options.h"

namespace tnt::python {
namespace {

std::map<std::string, std::function<py::dict()>>& registered() {
  static auto* by_name = new std::map<std::string, std::function<py::dict()>>();
  return *by_name;
}

}  // namespace

void register_defaults(const std::string& name, std::function<py::dict()> defaults) {
  registered()[name] = std::move(defaults);
}

py::dict option_defaults(const std::string& name) {
  const auto it = registered().find(name);
  if (it != registered().end()) return it->second();
  std::string known;
  for (const auto& entry : registered()) known += (known.empty() ? "" : ", ") + entry.first;
  throw ArgumentError(
      detail::concat("option_defaults(): name='", name, "' is not known: use one of ", known));
}

}  // namespace tnt::python
