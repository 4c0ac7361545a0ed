// Placement inside a Slurm allocation; see allocation_placement.h.
#include "plan/allocation_placement.h"

#include <algorithm>
#include <limits>

#include "common/launcher_error.h"

namespace tnt::cli {
namespace {

// Each host's upper bound, and what it is counted in ("task", "GPU").
struct Capacity {
  std::vector<HostRanks> hosts;
  bool gpus = false;
  std::string unit() const { return gpus ? "GPU" : "task"; }
  std::string source(const SlurmAllocation& a) const {
    return gpus ? "GPUs per node" : "SLURM_TASKS_PER_NODE=" + a.tasks_per_node_text;
  }
  std::string fix() const {
    return gpus ? "ask Slurm for more GPUs per node (--gpus-per-node)"
                : "ask Slurm for more tasks (sbatch/salloc --ntasks or --ntasks-per-node)";
  }
};

Capacity capacity_of(const SlurmAllocation& allocation, const AllocationRequest& request) {
  const int gpus = std::min(allocation.gpus_per_node.value_or(request.local_gpu_count),
                            request.visible_gpus.value_or(std::numeric_limits<int>::max()));
  const int k = std::max(1, request.ranks_per_gpu);
  Capacity capacity;
  capacity.gpus = !request.no_gpu && (gpus > 0 || allocation.gpus_per_task.has_value());
  for (std::size_t i = 0; i < allocation.hosts.size(); ++i) {
    int ranks = allocation.tasks_per_node[i];
    if (capacity.gpus && !allocation.gpus_per_node && allocation.gpus_per_task) {
      // GPUs bound to tasks (--gpus-per-task): a host has its tasks' GPUs,
      // however unevenly the tasks are spread; this node's count says
      // nothing about the others.
      ranks = allocation.tasks_per_node[i] * *allocation.gpus_per_task * k;
    } else if (capacity.gpus) {
      ranks = gpus * k;
    }
    capacity.hosts.push_back(HostRanks{allocation.hosts[i], ranks});
  }
  return capacity;
}

std::string plural(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

AllocationPlacement per_node(const Capacity& capacity, int k, const SlurmAllocation& allocation) {
  const auto smallest =
      std::min_element(capacity.hosts.begin(), capacity.hosts.end(),
                       [](const HostRanks& a, const HostRanks& b) { return a.ranks < b.ranks; });
  if (k > smallest->ranks) {
    throw LauncherError("--n-per-node " + std::to_string(k) + " is more than Slurm job " +
                        allocation.job_id + " allows on host " + smallest->host + " (" +
                        plural(smallest->ranks, capacity.unit()) + "; " +
                        capacity.source(allocation) + "): give --n-per-node " +
                        std::to_string(smallest->ranks) + " or less, or " + capacity.fix());
  }
  AllocationPlacement placement{{}, capacity.gpus};
  for (const auto& h : capacity.hosts) placement.hosts.push_back(HostRanks{h.host, k});
  return placement;
}

AllocationPlacement first_n(const Capacity& capacity, int n, const SlurmAllocation& allocation) {
  AllocationPlacement placement{{}, capacity.gpus};
  int left = n;
  for (const auto& h : capacity.hosts) {
    if (left == 0) break;
    const int take = std::min(left, h.ranks);
    placement.hosts.push_back(HostRanks{h.host, take});
    left -= take;
  }
  if (left > 0) {
    const int total = n - left;
    throw LauncherError("-n " + std::to_string(n) + " is more than the " +
                        plural(total, capacity.unit()) + " of Slurm job " + allocation.job_id +
                        " (" + describe_hosts(capacity.hosts) + "; " + capacity.source(allocation) +
                        "): give -n " + std::to_string(total) + " or less, or " + capacity.fix());
  }
  return placement;
}

}  // namespace

int AllocationPlacement::total_ranks() const {
  int total = 0;
  for (const auto& h : hosts) total += h.ranks;
  return total;
}

std::optional<int> AllocationPlacement::uniform_ranks_per_node() const {
  if (hosts.empty()) return std::nullopt;
  for (const auto& h : hosts) {
    if (h.ranks != hosts.front().ranks) return std::nullopt;
  }
  return hosts.front().ranks;
}

AllocationPlacement place_in_allocation(const SlurmAllocation& allocation,
                                        const AllocationRequest& request) {
  const Capacity capacity = capacity_of(allocation, request);
  if (request.ranks_per_node) return per_node(capacity, *request.ranks_per_node, allocation);
  if (request.total_ranks) return first_n(capacity, *request.total_ranks, allocation);
  return AllocationPlacement{capacity.hosts, capacity.gpus};
}

std::string describe_hosts(const std::vector<HostRanks>& hosts) {
  std::string text;
  for (const auto& h : hosts) {
    if (!text.empty()) text += ", ";
    text += std::to_string(h.ranks) + " on " + h.host;
  }
  return text;
}

}  // namespace tnt::cli
