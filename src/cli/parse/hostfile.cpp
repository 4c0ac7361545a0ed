// Hostfile parsing; see hostfile.h.
#include "parse/hostfile.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\f\v");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\f\v");
  return s.substr(first, last - first + 1);
}

std::string strip_comment(const std::string& line) { return line.substr(0, line.find('#')); }

// Host names go into mpirun's `--host h1:K,h2:K`, so ',' ':' and blanks would
// silently change the meaning; reject them with the OpenMPI "slots=" hint.
void check_host_name(const std::string& host, const std::string& source, int line_number) {
  const bool bad = std::any_of(host.begin(), host.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == ':' || c == '=';
  });
  if (bad) {
    throw LauncherError("hostfile " + source + " line " + std::to_string(line_number) + ": '" +
                        host +
                        "' is not a host name: write one host name per line and set the "
                        "ranks per host with --n-per-node (OpenMPI's 'slots=' is not used)");
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> parse_hostfile(const std::string& text, const std::string& source) {
  std::vector<std::string> hosts;
  std::map<std::string, int> first_line;  // lower-case name -> line (DNS names ignore case)
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string host = trim(strip_comment(line));
    if (host.empty()) continue;
    check_host_name(host, source, number);
    const auto [it, inserted] = first_line.emplace(lower(host), number);
    if (!inserted) {
      throw LauncherError("hostfile " + source + ": host '" + host + "' appears twice (lines " +
                          std::to_string(it->second) + " and " + std::to_string(number) +
                          "): list each host once and use --n-per-node to start several "
                          "ranks per host");
    }
    hosts.push_back(host);
  }
  if (hosts.empty()) {
    throw LauncherError("hostfile " + source +
                        " lists no hosts: write one host name per line (lines starting "
                        "with '#' are comments)");
  }
  return hosts;
}

std::vector<std::string> read_hostfile(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    throw LauncherError("hostfile " + path +
                        " is a directory: give --hostfile a file with one "
                        "host name per line");
  }
  std::ifstream file(path);
  if (!file) {
    throw LauncherError("cannot read hostfile " + path + ": " + std::strerror(errno) +
                        "; check the path given to --hostfile");
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    throw LauncherError("cannot read hostfile " + path + ": " + std::strerror(errno));
  }
  return parse_hostfile(text.str(), path);
}

}  // namespace tnt::cli
