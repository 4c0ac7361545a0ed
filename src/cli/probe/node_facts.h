// What the launcher needs to know about the node it runs on.
//
// Everything the launch plan depends on besides the user's flags is gathered
// here once, so that build_launch_plan() stays a pure function: unit tests and
// --dry-run feed it fixed facts instead of probing the machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <tarantella/base/arg.h>

#include "probe/slurm_allocation.h"

namespace tnt::cli {

/// Facts about the launching node.
/// Example: `NodeFacts().gpu_count(2).core_count(16).effective_uid(1000)`.
class NodeFacts {
  /// GPUs the ranks will see: those `nvidia-smi -L` reports (0 when
  /// nvidia-smi is missing), limited by the launcher's CUDA_VISIBLE_DEVICES.
  TNT_ARG(int, gpu_count) = 0;
  /// All the GPUs `nvidia-smi -L` reports, CUDA_VISIBLE_DEVICES aside (unset:
  /// gpu_count), for a CUDA_VISIBLE_DEVICES that -x gives the ranks.
  TNT_ARG(std::optional<int>, installed_gpu_count);
  /// CPU cores this process may run on.
  TNT_ARG(int, core_count) = 1;
  /// NUMA nodes under /sys/devices/system/node.
  TNT_ARG(int, numa_node_count) = 1;
  /// Whether `numactl` is found in PATH.
  TNT_ARG(bool, numactl_available) = false;
  TNT_ARG(unsigned, effective_uid) = 0;
  /// Whether the user's environment sets OMP_NUM_THREADS (then it is kept).
  TNT_ARG(bool, omp_num_threads_set) = false;
  /// Absolute path of the running launcher; mpirun starts it as the per-rank wrapper.
  TNT_ARG(std::string, launcher_path);
  /// The launcher's working directory (absolute): relative file flags such as
  /// --timeline are resolved against it, because ranks may start elsewhere.
  TNT_ARG(std::string, current_dir) = "/";
  /// isatty(STDOUT_FILENO) of the launcher: ranks' own stdout is a pipe
  /// under mpirun, so they learn it from TNT_STDOUT_IS_TERMINAL.
  TNT_ARG(bool, stdout_is_terminal) = false;
  /// The interpreter for .py programs without --python-interpreter: the one
  /// recorded at build time, else "python3" (see python_interpreter.h).
  TNT_ARG(std::string, default_python) = "python3";
  /// The build tree's python folder next to the launcher (holding
  /// tarantella/__init__.py), put first in the ranks' PYTHONPATH; "" when
  /// the launcher is installed.
  TNT_ARG(std::string, python_package_dir);
  /// The launcher's own PYTHONPATH, kept after python_package_dir.
  TNT_ARG(std::optional<std::string>, python_path);
  /// The TNT_* and NCCL_* variables set in the launcher's environment: passed
  /// on to every rank, as horovodrun does (a host started through ssh has an
  /// environment of its own, and the ranks must agree on them).
  TNT_ARG(std::vector<std::string>, forwarded_variables);
  /// The Slurm job this node runs in (sbatch, salloc), from SLURM_* variables.
  TNT_ARG(std::optional<SlurmAllocation>, slurm_allocation);
};

/// Probes this node: runs `nvidia-smi -L`, reads the CPU affinity, /sys and
/// the environment. Throws LauncherError for malformed SLURM_* variables.
NodeFacts detect_node_facts();

/// Counts lines starting with "GPU " (the format of `nvidia-smi -L`).
int count_gpu_lines(const std::string& nvidia_smi_output);

/// The GPUs the ranks will see: `installed` (nvidia-smi counts them all),
/// limited by CUDA_VISIBLE_DEVICES when it is set (null: not set), as CUDA
/// reads it: the entries before the first empty or negative one ("" hides
/// every GPU), at most `installed`.
int visible_gpu_count(int installed, const char* cuda_visible_devices);

/// Counts node<N> directories under `<sys_root>/devices/system/node`; at least 1.
int count_numa_nodes(const std::string& sys_root = "/sys");

/// Cores this process may run on (sched_getaffinity), falling back to
/// std::thread::hardware_concurrency(); at least 1.
int usable_core_count();

/// Full path of `name` in $PATH if it is an executable file there, else "".
std::string find_in_path(const std::string& name);

}  // namespace tnt::cli
