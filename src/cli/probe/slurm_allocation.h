// A Slurm allocation as the launcher sees it: the job's hosts and how many
// tasks (and GPUs) each may run, read from the variables sbatch, salloc and
// srun set.
//
// Slurm writes hosts and counts compressed: SLURM_JOB_NODELIST is a host
// list ("node[01-03,07],gpu5": a prefix with bracketed ranges that keep their
// zero padding) and SLURM_TASKS_PER_NODE a count list ("2(x3),1": 2 tasks on
// each of 3 nodes, then 1). Both are expanded here, and every malformed value
// is an error that names the variable, the value and what was expected, so a
// broken environment never turns into a silently wrong job.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tnt::cli {

/// Example: job "42" on {"node01", "node02"} with tasks {2, 1}.
struct SlurmAllocation {
  std::string job_id;
  /// SLURM_JOB_NODELIST expanded, in Slurm's order.
  std::vector<std::string> hosts;
  /// SLURM_TASKS_PER_NODE expanded: one count per host.
  std::vector<int> tasks_per_node;
  /// SLURM_GPUS_PER_NODE ("2", "a100:2"); nullopt when the job asked for no GPUs.
  std::optional<int> gpus_per_node;
  /// SLURM_GPUS_PER_TASK (sbatch --gpus-per-task): each task's own GPUs;
  /// nullopt when not set.
  std::optional<int> gpus_per_task;
  /// The raw values, quoted in messages and --dry-run notes.
  std::string node_list_text;
  std::string tasks_per_node_text;

  int total_tasks() const;
};

/// Expands a Slurm host list. Throws LauncherError naming `variable` for an
/// empty list, unbalanced brackets, a bad range ("[3-1]", "[a-b]") or an
/// empty name.
/// Example: `expand_host_list("n[1-2,05],g", "V")` -> {"n1", "n2", "n05", "g"}.
std::vector<std::string> expand_host_list(const std::string& text, const std::string& variable);

/// Expands a Slurm count list ("2(x3),1" -> {2, 2, 2, 1}). Throws
/// LauncherError naming `variable` for anything that is not a list of
/// counts >= 1, each optionally followed by "(xN)" with N >= 1.
std::vector<int> expand_count_list(const std::string& text, const std::string& variable);

/// Reads an environment variable; nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

/// The allocation this process runs in, or nullopt outside Slurm (no
/// SLURM_JOB_ID). Throws LauncherError when the variables contradict each
/// other (a task count per host that does not match the host list) or one
/// cannot be parsed.
std::optional<SlurmAllocation> read_slurm_allocation(const EnvLookup& env);

/// Example: `getenv_lookup()("HOME")`.
EnvLookup getenv_lookup();

}  // namespace tnt::cli
