// /proc scanning and the cleanup matching rule; see process_table.h.
#include "cleanup/process_table.h"

#include <dirent.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/program_path.h"

namespace tnt::cli {
namespace {

std::string read_link(const std::string& path) {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

// The kernel appends " (deleted)" to exe when the file was removed or
// replaced (e.g. the program was rebuilt while a stale rank still runs).
std::string executable_of(const std::string& dir) {
  const std::string resolved = real_path(dir + "/exe");
  if (!resolved.empty()) return resolved;
  std::string target = read_link(dir + "/exe");
  const std::string deleted = " (deleted)";
  if (target.size() > deleted.size() &&
      target.compare(target.size() - deleted.size(), deleted.size(), deleted) == 0) {
    target.resize(target.size() - deleted.size());
  }
  return target;
}

std::vector<std::string> read_cmdline(const std::string& dir) {
  std::ifstream file(dir + "/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(file, arg, '\0')) args.push_back(arg);
  return args;
}

// The script an interpreter runs: its first argument (argv[1]), or for a
// Python interpreter with options (`python3 -u train.py`, `python3 -X dev
// train.py`) its first argument past them that is a regular file.
std::string script_of(const std::string& dir, const std::string& executable) {
  const auto args = read_cmdline(dir);
  if (args.size() < 2 || args[1].empty()) return "";
  const auto slash = executable.rfind('/');
  const bool python = executable.compare(slash == std::string::npos ? 0 : slash + 1, 6,
                                         "python") == 0;
  const auto absolute = [&](std::string path) -> std::string {
    if (path[0] == '/') return path;
    const std::string cwd = read_link(dir + "/cwd");
    return cwd.empty() ? "" : cwd + "/" + path;
  };
  if (!python || args[1][0] != '-') {
    const std::string path = absolute(args[1]);
    if (path.empty()) return "";
    const std::string resolved = real_path(path);
    return resolved.empty() ? normalize_absolute(path) : resolved;
  }
  for (std::size_t i = 2; i < args.size(); ++i) {
    if (args[i].empty() || args[i][0] == '-') continue;
    const std::string path = absolute(args[i]);
    if (path.empty()) return "";
    const std::string resolved = real_path(path);
    std::error_code error;
    if (!resolved.empty() && std::filesystem::is_regular_file(resolved, error)) return resolved;
  }
  return "";
}

// Fills uid and parent from the "Uid:" and "PPid:" lines of status.
bool read_status(const std::string& dir, ProcessInfo& info) {
  std::ifstream file(dir + "/status");
  std::string line;
  bool have_uid = false;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "Uid:") have_uid = static_cast<bool>(fields >> info.uid);
    if (key == "PPid:") fields >> info.parent;
  }
  return have_uid;
}

bool is_number(const std::string& name) {
  return !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::vector<ProcessInfo> scan_processes(const std::string& proc_root) {
  std::vector<ProcessInfo> processes;
  DIR* handle = ::opendir(proc_root.c_str());
  if (handle == nullptr) return processes;
  while (const dirent* entry = ::readdir(handle)) {
    const std::string name = entry->d_name;
    if (!is_number(name)) continue;
    const std::string dir = proc_root + "/" + name;
    ProcessInfo info;
    info.pid = static_cast<pid_t>(std::stol(name));
    if (!read_status(dir, info)) continue;  // vanished meanwhile
    info.executable = executable_of(dir);
    info.script = script_of(dir, info.executable);
    processes.push_back(info);
  }
  ::closedir(handle);
  return processes;
}

bool runs_program(const ProcessInfo& process, const std::string& program) {
  if (program.empty()) return false;
  return process.executable == program || process.script == program;
}

std::set<pid_t> self_and_ancestors(const std::vector<ProcessInfo>& processes, pid_t self) {
  std::map<pid_t, pid_t> parent_of;
  for (const auto& p : processes) parent_of[p.pid] = p.parent;
  std::set<pid_t> chain;
  for (pid_t pid = self; pid > 0 && chain.insert(pid).second;) {
    const auto it = parent_of.find(pid);
    if (it == parent_of.end()) break;
    pid = it->second;
  }
  return chain;
}

std::vector<pid_t> select_cleanup_targets(const std::vector<ProcessInfo>& processes,
                                          const std::string& program, unsigned uid,
                                          const std::set<pid_t>& protected_pids) {
  std::vector<pid_t> targets;
  for (const auto& p : processes) {
    if (p.uid == uid && protected_pids.count(p.pid) == 0 && runs_program(p, program)) {
      targets.push_back(p.pid);
    }
  }
  return targets;
}

}  // namespace tnt::cli
