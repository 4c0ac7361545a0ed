// Checking --network-interface; see network_interface.h.
#include "parse/network_interface.h"

#include <cctype>
#include <sstream>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

bool is_number_up_to(const std::string& s, int maximum) {
  if (s.empty() || s.size() > 3) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return std::stoi(s) <= maximum;
}

bool is_cidr(const std::string& item) {
  const auto slash = item.find('/');
  if (slash == std::string::npos || !is_number_up_to(item.substr(slash + 1), 32)) return false;
  std::istringstream in(item.substr(0, slash));
  int octets = 0;
  for (std::string octet; std::getline(in, octet, '.'); ++octets) {
    if (!is_number_up_to(octet, 255)) return false;
  }
  return octets == 4 && item[slash - 1] != '.';
}

bool is_interface_name(const std::string& item) {
  if (item.empty() || item.size() > 15) return false;
  for (char c : item) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
                    c == '-' || c == ':' || c == '@';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string parse_network_interface(const std::string& text) {
  std::istringstream in(text);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    any = true;
    if (item.find('/') != std::string::npos ? is_cidr(item) : is_interface_name(item)) continue;
    throw LauncherError("--network-interface '" + text + "': '" + item +
                        "' is neither an interface name (e.g. eth1, as `ip -br addr` lists "
                        "them) nor an IPv4 subnet (e.g. 10.1.0.0/16); give one, or several "
                        "separated by commas");
  }
  if (!any || text.back() == ',') {
    throw LauncherError("--network-interface '" + text +
                        "': give an interface name (e.g. eth1) or an IPv4 subnet (e.g. "
                        "10.1.0.0/16)");
  }
  return text;
}

}  // namespace tnt::cli
