// The shared-network choice; see network_choice.h.
#include "probe/network_choice.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

// "10.1.2.3" -> 0x0a010203; false for anything else.
bool parse_ipv4(const std::string& text, std::uint32_t& address) {
  std::istringstream in(text);
  address = 0;
  int octets = 0;
  for (std::string part; std::getline(in, part, '.'); ++octets) {
    if (part.empty() || part.size() > 3 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return false;
    const int value = std::stoi(part);
    if (value > 255) return false;
    address = (address << 8) | static_cast<std::uint32_t>(value);
  }
  return octets == 4;
}

std::string ipv4_text(std::uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
         std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
}

// "10.1.2.3/16" -> "10.1.0.0/16"; "" when it is not an IPv4 address.
std::string network_of(const std::string& cidr) {
  const auto slash = cidr.find('/');
  std::uint32_t address = 0;
  if (slash == std::string::npos || !parse_ipv4(cidr.substr(0, slash), address)) return "";
  const std::string bits_text = cidr.substr(slash + 1);
  if (bits_text.empty() || bits_text.size() > 2 ||
      bits_text.find_first_not_of("0123456789") != std::string::npos)
    return "";
  const int bits = std::stoi(bits_text);
  if (bits > 32) return "";
  const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return ipv4_text(address & mask) + "/" + bits_text;
}

bool is_bridge(const std::string& interface) {
  for (const char* prefix : {"docker", "virbr", "br-", "lxcbr", "cni"}) {
    if (interface.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

bool has_network(const HostNetworks& host, const std::string& network) {
  return std::any_of(host.networks.begin(), host.networks.end(),
                     [&](const InterfaceNetwork& n) { return n.network == network; });
}

std::string describe(const HostNetworks& host) {
  std::string text = host.host + ": ";
  if (host.networks.empty()) return text + "no IPv4 network";
  for (std::size_t i = 0; i < host.networks.size(); ++i) {
    text += (i ? ", " : "") + host.networks[i].network + " (" + host.networks[i].interface + ")";
  }
  return text;
}

[[noreturn]] void none_shared(const std::vector<HostNetworks>& hosts) {
  std::string listing;
  for (const auto& h : hosts) listing += (listing.empty() ? "" : "; ") + describe(h);
  throw LauncherError("no IPv4 network is shared by this node and every host (" + listing +
                      "), so the ranks could not reach each other: connect the hosts to one "
                      "network, or name the one to use with --network-interface NAME|CIDR "
                      "(e.g. --network-interface eth1)");
}

}  // namespace

std::vector<InterfaceNetwork> parse_ip_addresses(const std::string& ip_output) {
  std::vector<InterfaceNetwork> networks;
  std::istringstream lines(ip_output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string index, interface, family, cidr;
    if (!(words >> index >> interface >> family >> cidr) || family != "inet") continue;
    if (index.empty() || index.back() != ':') continue;
    interface = interface.substr(0, interface.find('@'));
    const std::string network = network_of(cidr);
    if (network.empty() || network.rfind("127.", 0) == 0) continue;
    networks.push_back({interface, network});
  }
  return networks;
}

std::vector<HostNetworks> parse_node_prefixed_addresses(const std::string& output,
                                                        const std::vector<std::string>& nodes) {
  std::map<std::string, std::string> lines;  // node -> its `ip` lines
  std::istringstream in(output);
  for (std::string node, rest; in >> node && std::getline(in, rest);) lines[node] += rest + "\n";
  std::vector<HostNetworks> all;
  for (const auto& node : nodes) all.push_back({node, parse_ip_addresses(lines[node])});
  return all;
}

NetworkChoice choose_shared_network(const std::vector<HostNetworks>& hosts) {
  if (hosts.empty()) none_shared(hosts);
  NetworkChoice choice;
  std::string interfaces;
  std::vector<std::string> chosen;
  for (const auto& n : hosts.front().networks) {
    if (is_bridge(n.interface)) continue;
    if (std::find(chosen.begin(), chosen.end(), n.network) != chosen.end()) continue;
    const bool everywhere = std::all_of(hosts.begin() + 1, hosts.end(), [&](const HostNetworks& h) {
      return has_network(h, n.network);
    });
    if (!everywhere) continue;
    chosen.push_back(n.network);
    choice.value += (choice.value.empty() ? "" : ",") + n.network;
    interfaces += (interfaces.empty() ? "" : ", ") + n.interface;
  }
  if (choice.value.empty()) none_shared(hosts);
  choice.explanation = choice.value + " (" + interfaces + " on " + hosts.front().host +
                       "), the IPv4 network(s) shared by " + hosts.front().host + " and all " +
                       std::to_string(hosts.size() - 1) +
                       " host(s); --network-interface NAME|CIDR chooses another";
  return choice;
}

}  // namespace tnt::cli
