// Probing the launching node; see node_facts.h.
#include "probe/node_facts.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "common/program_path.h"
#include "probe/python_interpreter.h"
#include "common/spawn.h"

namespace tnt::cli {

int count_gpu_lines(const std::string& nvidia_smi_output) {
  int count = 0;
  std::size_t start = 0;
  while (start < nvidia_smi_output.size()) {
    if (nvidia_smi_output.compare(start, 4, "GPU ") == 0) ++count;
    const auto newline = nvidia_smi_output.find('\n', start);
    if (newline == std::string::npos) break;
    start = newline + 1;
  }
  return count;
}

int count_numa_nodes(const std::string& sys_root) {
  const std::string dir = sys_root + "/devices/system/node";
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return 1;  // no NUMA information: the node is one NUMA node
  int count = 0;
  while (const dirent* entry = ::readdir(handle)) {
    const std::string name = entry->d_name;
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        name.find_first_not_of("0123456789", 4) == std::string::npos) {
      ++count;
    }
  }
  ::closedir(handle);
  return count > 0 ? count : 1;
}

int usable_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return CPU_COUNT(&set);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  return search_path(name, path ? path : "", /*need_executable=*/true);
}

int visible_gpu_count(int installed, const char* cuda_visible_devices) {
  if (cuda_visible_devices == nullptr) return installed;
  int count = 0;
  std::string entry;
  std::istringstream entries{std::string(cuda_visible_devices)};
  while (std::getline(entries, entry, ',')) {
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    if (entry.empty() || entry[0] == '-') break;  // CUDA stops at an invalid entry
    ++count;
  }
  return std::min(count, installed);
}

namespace {

int detect_installed_gpu_count() {
  if (find_in_path("nvidia-smi").empty()) return 0;
  try {
    return count_gpu_lines(capture_stdout({"nvidia-smi", "-L"}));
  } catch (const std::exception&) {
    return 0;  // a broken driver install means "no usable GPU", not a launch failure
  }
}

std::string self_path() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "tarantella";
  return std::string(buffer, static_cast<std::size_t>(n));
}

// The names of the TNT_* and NCCL_* variables in this environment.
std::vector<std::string> tarantella_and_nccl_variables() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const auto eq = text.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = text.substr(0, eq);
    if (name.rfind("TNT_", 0) == 0 || name.rfind("NCCL_", 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

NodeFacts detect_node_facts() {
  const std::string launcher = self_path();
  const char* python_path = std::getenv("PYTHONPATH");
  const int installed = detect_installed_gpu_count();
  return NodeFacts()
      // The ranks inherit CUDA_VISIBLE_DEVICES (a Slurm job's, or the
      // user's): one rank per GPU means one per GPU they can see.
      .gpu_count(visible_gpu_count(installed, std::getenv("CUDA_VISIBLE_DEVICES")))
      .installed_gpu_count(installed)
      .core_count(usable_core_count())
      .numa_node_count(count_numa_nodes())
      .numactl_available(!find_in_path("numactl").empty())
      .effective_uid(::geteuid())
      .omp_num_threads_set(std::getenv("OMP_NUM_THREADS") != nullptr)
      .launcher_path(launcher)
      .current_dir(current_program_lookup(false).current_dir)
      .stdout_is_terminal(::isatty(STDOUT_FILENO) == 1)
      .default_python(default_python_interpreter(launcher, recorded_python_interpreter()))
      .python_package_dir(python_package_dir(launcher))
      .python_path(python_path ? std::optional<std::string>(python_path) : std::nullopt)
      .forwarded_variables(tarantella_and_nccl_variables())
      .slurm_allocation(read_slurm_allocation(getenv_lookup()));
}

}  // namespace tnt::cli
