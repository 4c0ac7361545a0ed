// Where ranks run inside a Slurm allocation.
//
// The allocation is the upper bound: by default every host of the job runs
// as many ranks as it has tasks (or GPUs, when the job has GPUs and
// --no-gpu is not given). -n N takes N ranks out of that, filling hosts in
// the job's order (Slurm's block distribution); --n-per-node K runs K on
// every host. Asking for more than the allocation holds is an error with the
// numbers, never a silently oversubscribed node or a job that waits forever.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "probe/slurm_allocation.h"

namespace tnt::cli {

/// One host of the job and the ranks it runs.
struct HostRanks {
  std::string host;
  int ranks = 0;
  bool operator==(const HostRanks& other) const {
    return host == other.host && ranks == other.ranks;
  }
};

/// The decision for the whole job.
struct AllocationPlacement {
  std::vector<HostRanks> hosts;  ///< hosts without ranks are left out
  bool use_gpu = false;
  int total_ranks() const;
  /// The count of every host when they are all alike, else nullopt.
  std::optional<int> uniform_ranks_per_node() const;
};

/// What the user asked for, from the flags.
struct AllocationRequest {
  std::optional<int> total_ranks;     ///< -n
  std::optional<int> ranks_per_node;  ///< --n-per-node
  bool no_gpu = false;
  /// GPUs of the launching node (nvidia-smi), used when the job does not say
  /// (SLURM_GPUS_PER_NODE unset); all hosts are assumed alike.
  int local_gpu_count = 0;
  /// --ranks-per-gpu: each GPU holds this many ranks (a host's capacity is
  /// its GPUs times this).
  int ranks_per_gpu = 1;
  /// The GPUs of a CUDA_VISIBLE_DEVICES given with -x (at most this many of
  /// a node's are seen by its ranks); nullopt without one.
  std::optional<int> visible_gpus;
};

/// Throws LauncherError when the request exceeds the allocation.
/// Example: tasks {2, 1} on {"a", "b"}, no flags -> {{"a", 2}, {"b", 1}}.
AllocationPlacement place_in_allocation(const SlurmAllocation& allocation,
                                        const AllocationRequest& request);

/// "2 on node01, 1 on node02", for messages and --dry-run notes.
std::string describe_hosts(const std::vector<HostRanks>& hosts);

}  // namespace tnt::cli
