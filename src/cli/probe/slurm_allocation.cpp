// Slurm's compressed lists and the allocation variables; see slurm_allocation.h.
#include "probe/slurm_allocation.h"

#include <cstdlib>
#include <numeric>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

// Counts and ranges above this are typos, not clusters.
constexpr long kMaxCount = 1000000;

[[noreturn]] void bad_value(const std::string& variable, const std::string& text,
                            const std::string& problem, const std::string& expected) {
  throw LauncherError(variable + "='" + text + "' " + problem + ": expected " + expected +
                      "; is this run inside a Slurm job (sbatch, salloc), and was the variable "
                      "changed by hand?");
}

const char kHostListForm[] = "a Slurm host list such as 'node[01-03,07],gpu5'";
const char kCountListForm[] = "a Slurm count list such as '2(x3),1'";

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// A decimal count in [minimum, kMaxCount], or nullopt.
std::optional<long> parse_count(const std::string& s, long minimum) {
  if (!all_digits(s) || s.size() > 7) return std::nullopt;
  const long value = std::strtol(s.c_str(), nullptr, 10);
  if (value < minimum || value > kMaxCount) return std::nullopt;
  return value;
}

// Splits at commas that are not inside brackets.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

std::string zero_padded(long value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// "01-03,7" -> {"01", "02", "03", "7"}: a range keeps the width of its first bound.
std::vector<std::string> expand_ranges(const std::string& inside, const std::string& variable,
                                       const std::string& text) {
  std::vector<std::string> values;
  for (const auto& range : split_top_level(inside)) {
    const auto dash = range.find('-');
    const std::string low_text = range.substr(0, dash);
    const std::string high_text = dash == std::string::npos ? low_text : range.substr(dash + 1);
    const auto low = parse_count(low_text, 0);
    const auto high = parse_count(high_text, 0);
    if (!low || !high || *high < *low || *high - *low >= kMaxCount) {
      bad_value(variable, text, "has a bad range '[" + range + "]'", kHostListForm);
    }
    for (long v = *low; v <= *high; ++v) values.push_back(zero_padded(v, low_text.size()));
  }
  return values;
}

// One comma-free item; several bracket groups multiply ("r[1-2]n[1-2]": 4 hosts).
std::vector<std::string> expand_item(const std::string& item, const std::string& variable,
                                     const std::string& text) {
  const auto open = item.find('[');
  if (open == std::string::npos) {
    if (item.find(']') != std::string::npos)
      bad_value(variable, text, "has a stray ']'", kHostListForm);
    return {item};
  }
  const auto close = item.find(']', open);
  if (close == std::string::npos || item.find('[', open + 1) < close) {
    bad_value(variable, text, "has an unclosed '['", kHostListForm);
  }
  const std::string prefix = item.substr(0, open);
  std::vector<std::string> hosts;
  for (const auto& value : expand_ranges(item.substr(open + 1, close - open - 1), variable, text)) {
    for (const auto& tail : expand_item(item.substr(close + 1), variable, text)) {
      hosts.push_back(prefix + value + tail);
    }
  }
  return hosts;
}

// "tesla:2" or "2" (a list of them is summed); nullopt for "0"/unset.
// SLURM_GPUS_PER_NODE or SLURM_GPUS_PER_TASK: "2", "a100:2", "a100:1,v100:1".
std::optional<int> parse_gpu_count(const std::optional<std::string>& text,
                                   const std::string& variable) {
  if (!text || text->empty()) return std::nullopt;
  long total = 0;
  for (const auto& part : split_top_level(*text)) {
    const std::string count = part.substr(part.rfind(':') + 1);
    const auto value = parse_count(count, 0);
    if (!value) {
      bad_value(variable, *text, "is not a GPU count",
                "a count such as '2' or 'a100:2'");
    }
    total += *value;
  }
  if (total == 0) return std::nullopt;
  return static_cast<int>(total);
}

std::string required(const EnvLookup& env, const std::string& name, const std::string& job_id) {
  const auto value = env(name);
  if (!value || value->empty()) {
    throw LauncherError("SLURM_JOB_ID=" + job_id + " is set but " + name +
                        " is not: the Slurm environment is incomplete; start tarantella in the "
                        "job's batch script or salloc shell, or unset SLURM_JOB_ID to run "
                        "outside Slurm");
  }
  return *value;
}

// `srun -n 4 tarantella ...` would start four launchers, each starting the
// whole job: the classic "worlds of one" mistake. One launcher per job.
void check_not_one_of_many_tasks(const EnvLookup& env) {
  const auto tasks = env("SLURM_STEP_NUM_TASKS");
  if (!tasks || !env("SLURM_PROCID") || parse_count(*tasks, 1).value_or(1) <= 1) return;
  throw LauncherError("tarantella runs as task " + *env("SLURM_PROCID") + " of " + *tasks +
                      " tasks of an srun step (SLURM_STEP_NUM_TASKS=" + *tasks +
                      "), so every task would start the whole job: run tarantella once, in the "
                      "batch script or the salloc shell (not under srun), and it starts the "
                      "ranks itself (add --srun to start them with srun)");
}

}  // namespace

int SlurmAllocation::total_tasks() const {
  return std::accumulate(tasks_per_node.begin(), tasks_per_node.end(), 0);
}

std::vector<std::string> expand_host_list(const std::string& text, const std::string& variable) {
  if (text.empty()) bad_value(variable, text, "is empty", kHostListForm);
  std::vector<std::string> hosts;
  for (const auto& item : split_top_level(text)) {
    if (item.empty() || item.find_first_of(" \t") != std::string::npos) {
      bad_value(variable, text, "has an empty or blank host name", kHostListForm);
    }
    for (auto& host : expand_item(item, variable, text)) hosts.push_back(std::move(host));
  }
  if (static_cast<long>(hosts.size()) > kMaxCount) {
    bad_value(variable, text, "names too many hosts", kHostListForm);
  }
  return hosts;
}

std::vector<int> expand_count_list(const std::string& text, const std::string& variable) {
  if (text.empty()) bad_value(variable, text, "is empty", kCountListForm);
  std::vector<int> counts;
  for (const auto& item : split_top_level(text)) {
    const auto paren = item.find('(');
    const auto count = parse_count(item.substr(0, paren), 1);
    std::optional<long> repeat = 1;
    if (paren != std::string::npos) {
      const bool framed =
          item.size() > paren + 3 && item.compare(paren, 2, "(x") == 0 && item.back() == ')';
      repeat =
          framed ? parse_count(item.substr(paren + 2, item.size() - paren - 3), 1) : std::nullopt;
    }
    if (!count || !repeat || counts.size() + *repeat > static_cast<std::size_t>(kMaxCount)) {
      bad_value(variable, text, "has a bad entry '" + item + "'", kCountListForm);
    }
    counts.insert(counts.end(), static_cast<std::size_t>(*repeat), static_cast<int>(*count));
  }
  return counts;
}

std::optional<SlurmAllocation> read_slurm_allocation(const EnvLookup& env) {
  const auto job_id = env("SLURM_JOB_ID");
  if (!job_id || job_id->empty()) return std::nullopt;
  check_not_one_of_many_tasks(env);
  SlurmAllocation allocation;
  allocation.job_id = *job_id;
  allocation.node_list_text = required(env, "SLURM_JOB_NODELIST", *job_id);
  allocation.tasks_per_node_text = required(env, "SLURM_TASKS_PER_NODE", *job_id);
  allocation.hosts = expand_host_list(allocation.node_list_text, "SLURM_JOB_NODELIST");
  allocation.tasks_per_node =
      expand_count_list(allocation.tasks_per_node_text, "SLURM_TASKS_PER_NODE");
  if (allocation.tasks_per_node.size() != allocation.hosts.size()) {
    throw LauncherError(
        "SLURM_TASKS_PER_NODE='" + allocation.tasks_per_node_text + "' gives " +
        std::to_string(allocation.tasks_per_node.size()) +
        " task count(s) but SLURM_JOB_NODELIST='" + allocation.node_list_text + "' names " +
        std::to_string(allocation.hosts.size()) +
        " host(s): the Slurm environment is inconsistent; start tarantella in the job's batch "
        "script or salloc shell, where Slurm sets both");
  }
  allocation.gpus_per_node = parse_gpu_count(env("SLURM_GPUS_PER_NODE"), "SLURM_GPUS_PER_NODE");
  allocation.gpus_per_task = parse_gpu_count(env("SLURM_GPUS_PER_TASK"), "SLURM_GPUS_PER_TASK");
  return allocation;
}

EnvLookup getenv_lookup() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
}

}  // namespace tnt::cli
